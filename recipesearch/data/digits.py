"""``digits``: scikit-learn's embedded 8x8 handwritten digits (UCI optdigits test part, 1797 images).

Source: ``sklearn.datasets.load_digits`` (Alpaydin & Kaynak, UCI ML repository, 1998). No download, no
files: the dataset ships inside scikit-learn, which makes it the default for tests and quick searches.
It is read from scikit-learn's own data file, the one ``load_digits`` reads, without importing scikit-learn:
that import (with SciPy) costs ~1.2 s of CPU in every process that loads digits, each trial worker among
them, where reading the file takes 0.05 s (``read_embedded``; ``load_digits`` where the file is not found).

The train/test split is fixed forever: 20% test, stratified, from ``numpy.random.RandomState(0)``'s
permutation (the legacy generator whose stream numpy keeps stable) and ``split.stratified_mask``.
"""
from __future__ import annotations

import gzip
import importlib.util
from pathlib import Path

import numpy as np
import torch

from recipesearch.data.raw import RawDataset
from recipesearch.data.registry import register_dataset
from recipesearch.data.spec import DataSpec
from recipesearch.data.split import fraction_count, stratified_mask

TEST_FRACTION = 0.2
SPLIT_SEED = 0


def digits_test_mask(labels: torch.Tensor) -> torch.Tensor:
    """The fixed test-set mask over sklearn's 1797 digits (must never change between releases)."""
    order = torch.from_numpy(np.random.RandomState(SPLIT_SEED).permutation(labels.numel()))
    return stratified_mask(labels, order, fraction_count(labels.numel(), TEST_FRACTION))


def embedded_file() -> Path | None:
    """scikit-learn's ``datasets/data/digits.csv.gz``, found without importing scikit-learn; None if absent."""
    spec = importlib.util.find_spec("sklearn")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "datasets" / "data" / "digits.csv.gz"
        if path.is_file():
            return path
    return None


def read_embedded() -> tuple[np.ndarray, np.ndarray]:
    """The 1797 digits as scikit-learn has them: images [1797, 8, 8] of 0..16 ink counts (float64), labels (int64).

    Read from the file as ``load_digits`` reads it (gzipped CSV, 64 pixels then the label per row); where a
    scikit-learn lays out its data otherwise, ``load_digits`` itself."""
    path = embedded_file()
    if path is None:
        from sklearn.datasets import load_digits as sklearn_digits

        bunch = sklearn_digits()
        return np.asarray(bunch.images, dtype=np.float64), np.asarray(bunch.target, dtype=np.int64)
    with gzip.open(path, "rt") as f:
        table = np.loadtxt(f, delimiter=",")
    return table[:, :-1].reshape(-1, 8, 8), table[:, -1].astype(np.int64)


@register_dataset("digits")
def load_digits(spec: DataSpec) -> RawDataset:
    ink, target = read_embedded()
    # values are 0..16 ink counts: scale to 0..255 (16 -> 255) and round
    pixels = np.rint(ink * (255.0 / 16.0)).clip(0, 255)
    images = torch.from_numpy(pixels.astype(np.uint8)).unsqueeze(1)  # [1797, 1, 8, 8]
    labels = torch.from_numpy(target)
    test = digits_test_mask(labels)
    return RawDataset(
        train_images=images[~test].contiguous(),
        train_labels=labels[~test].contiguous(),
        test_images=images[test].contiguous(),
        test_labels=labels[test].contiguous(),
        num_classes=10,
        class_names=tuple(str(c) for c in range(10)),
        hflip=False,  # a mirrored 2, 3, 4, 5, 7 or 9 is not that digit
        crop_padding=2,
        native_size=8,
        default_size=16,  # upsampled once (bilinear): 8x8 is too small for strided conv stems
    )
