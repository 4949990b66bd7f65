"""``cifar10``: CIFAR-10 (Krizhevsky, 2009, "Learning Multiple Layers of Features from Tiny Images").

Decodes the two on-disk formats of https://www.cs.toronto.edu/~kriz/cifar.html without torchvision:
- python: ``cifar-10-batches-py/{data_batch_1..5,test_batch,batches.meta}``, pickled dicts with
  ``b"data"`` (uint8 [10000, 3072], each row the red, then green, then blue 32x32 plane, row-major) and
  ``b"labels"`` (list of int); ``batches.meta`` holds ``b"label_names"``. Pickle runs code: only point
  ``data.root`` at files you trust (torchvision reads them the same way).
- binary: ``cifar-10-batches-bin/{data_batch_1..5,test_batch}.bin``, records of 1 label byte + 3072 pixel
  bytes in the same order; ``batches.meta.txt`` holds one class name per line.
``data.download: true`` lets ``torchvision.datasets.CIFAR10`` fetch the python version.
"""
from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import torch

from recipesearch.data.raw import RawDataset, as_labels
from recipesearch.data.registry import candidate_dirs, register_dataset, spec_root
from recipesearch.data.spec import DataSpec
from recipesearch.errors import DataNotFoundError, UserError

TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_BATCH = "test_batch"
CLASS_NAMES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
MEAN = (0.4914, 0.4822, 0.4465)  # the standard per-channel statistics of the 50000 training images
STD = (0.2470, 0.2435, 0.2616)
RECORD = 1 + 3 * 32 * 32


def _get(d: dict, key: str) -> Any:
    """A value of a CIFAR pickle dict, whose keys are bytes (Python 2 pickles) or str."""
    return d[key.encode()] if key.encode() in d else d[key]


def _unpickle(path: Path) -> dict:
    with open(path, "rb") as f:
        return pickle.load(f, encoding="bytes")


def read_python_batches(directory: Path, names: tuple[str, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """Concatenated images uint8 [N, 3, 32, 32] and labels int64 [N] of pickled batches."""
    images, labels = [], []
    for name in names:
        batch = _unpickle(directory / name)
        data = np.asarray(_get(batch, "data"), dtype=np.uint8)
        images.append(data.reshape(-1, 3, 32, 32))
        labels.append(np.asarray(_get(batch, "labels"), dtype=np.int64))
    return torch.from_numpy(np.concatenate(images)), torch.from_numpy(np.concatenate(labels))


def read_binary_batches(directory: Path, names: tuple[str, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """Concatenated images and labels of binary ``<name>.bin`` batches."""
    records = []
    for name in names:
        raw = np.fromfile(directory / f"{name}.bin", dtype=np.uint8)
        if raw.size % RECORD:
            raise UserError(f"{directory / name}.bin: size {raw.size} is not a multiple of {RECORD}-byte records")
        records.append(raw.reshape(-1, RECORD))
    table = np.concatenate(records)
    images = np.ascontiguousarray(table[:, 1:]).reshape(-1, 3, 32, 32)
    return torch.from_numpy(images), as_labels(table[:, 0])


def _class_names(directory: Path, binary: bool) -> tuple[str, ...]:
    """Names from batches.meta(.txt) when present, else the standard ten."""
    names: list[str] = []
    text_meta, pickle_meta = directory / "batches.meta.txt", directory / "batches.meta"
    if binary and text_meta.is_file():
        names = [line.strip() for line in text_meta.read_text().splitlines() if line.strip()]
    elif not binary and pickle_meta.is_file():
        raw_names = _get(_unpickle(pickle_meta), "label_names")
        names = [n.decode() if isinstance(n, bytes) else str(n) for n in raw_names]
    return tuple(names) or CLASS_NAMES


def find_layout(directory: Path) -> str | None:
    """``"python"`` or ``"binary"`` when ``directory`` holds every batch of that format, else None."""
    names = (*TRAIN_BATCHES, TEST_BATCH)
    if all((directory / n).is_file() for n in names):
        return "python"
    if all((directory / f"{n}.bin").is_file() for n in names):
        return "binary"
    return None


def _download(spec: DataSpec) -> Path:
    import torchvision

    root = spec_root(spec)
    try:
        torchvision.datasets.CIFAR10(str(root), train=True, download=True)
    except Exception as exc:  # network errors come in many types; the user needs one line
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataNotFoundError(f"cifar10: download into {root} failed: {msg}") from exc
    return root / "cifar-10-batches-py"


@register_dataset("cifar10")
def load_cifar10(spec: DataSpec) -> RawDataset:
    searched = candidate_dirs(spec, subdirs=["cifar-10-batches-py", "cifar-10-batches-bin"])
    found = next(((d, layout) for d in searched if (layout := find_layout(d)) is not None), None)
    if found is None and spec.download:
        directory = _download(spec)
        layout = find_layout(directory)
        found = (directory, layout) if layout is not None else None
    if found is None:
        raise DataNotFoundError(
            f"cifar10: data_batch_1..5 and test_batch not found in {', '.join(map(str, searched))}; extract "
            f"cifar-10-python.tar.gz (or cifar-10-binary.tar.gz) from https://www.cs.toronto.edu/~kriz/cifar.html "
            f"into {searched[0]}, or set data.download: true"
        )
    directory, layout = found
    read = read_binary_batches if layout == "binary" else read_python_batches
    train_images, train_labels = read(directory, TRAIN_BATCHES)
    test_images, test_labels = read(directory, (TEST_BATCH,))
    return RawDataset(
        train_images=train_images,
        train_labels=train_labels,
        test_images=test_images,
        test_labels=test_labels,
        num_classes=10,
        class_names=_class_names(directory, layout == "binary"),
        hflip=True,
        crop_padding=4,  # the standard CIFAR augmentation: pad 4, random 32x32 crop, flip
        native_size=32,
        default_size=32,
        mean=MEAN,
        std=STD,
    )
