"""Datasets as device-resident uint8 tensors, per-batch tensor augmentation, and ``BatchLoader``.

``load_data(DataSpec(name="digits"), device)`` returns a ``DataBundle``; ``BatchLoader`` iterates it.
Importing the package registers the built-in datasets: digits, fashion_mnist, cifar10, imagefolder.
"""
from __future__ import annotations

from recipesearch.data.raw import RawDataset
from recipesearch.data.registry import get_dataset, list_datasets, register_dataset

# built-in datasets register themselves on import
from recipesearch.data import cifar10, digits, fashion_mnist, imagefolder  # noqa: F401,E402  isort: skip
from recipesearch.data.augment import normalize, normalize_params, random_crop, random_hflip
from recipesearch.data.bundle import DataBundle, ImageTensors, clear_cache, load_data
from recipesearch.data.loader import BatchLoader, eval_batches
from recipesearch.data.spec import DataSpec

__all__ = [
    "BatchLoader",
    "DataBundle",
    "DataSpec",
    "ImageTensors",
    "RawDataset",
    "clear_cache",
    "eval_batches",
    "get_dataset",
    "list_datasets",
    "load_data",
    "normalize",
    "normalize_params",
    "random_crop",
    "random_hflip",
    "register_dataset",
]
