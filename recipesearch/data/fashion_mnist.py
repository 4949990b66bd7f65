"""``fashion_mnist``: Zalando's Fashion-MNIST (Xiao, Rasul & Vollgraf, 2017, arXiv:1708.07747).

Reads the four IDX files (``train-images-idx3-ubyte.gz`` ...) with gzip + ``np.frombuffer``; the IDX
format is the one of LeCun's MNIST page (big-endian magic 2051 for images, 2049 for labels, then one
big-endian int32 per dimension). Searched in order: ``data.root``, ``$RECIPESEARCH_DATA/fashion_mnist``,
the Debian package ``dataset-fashion-mnist`` (``/usr/share/datasets/fashion-mnist``), and torchvision's
``FashionMNIST/raw`` layout under each. ``data.download: true`` lets torchvision fetch the files.
"""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import torch

from recipesearch.data.raw import RawDataset
from recipesearch.data.registry import candidate_dirs, register_dataset, spec_root
from recipesearch.data.spec import DataSpec
from recipesearch.errors import DataNotFoundError, UserError

DEBIAN_DIR = Path("/usr/share/datasets/fashion-mnist")  # dpkg -L dataset-fashion-mnist
FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}
CLASS_NAMES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")
IMAGES_MAGIC, LABELS_MAGIC = 2051, 2049


def read_idx(path: Path, magic: int | None = None) -> np.ndarray:
    """An IDX file (gzipped when the name ends in .gz) as a uint8 array of its declared shape.

    ``magic`` (2051 images, 2049 labels) is checked when given.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise UserError(f"{path}: not an unsigned-byte IDX file (bad magic number)")
    ndim = raw[3]
    if magic is not None and int.from_bytes(raw[:4], "big") != magic:
        raise UserError(f"{path}: IDX magic number is {int.from_bytes(raw[:4], 'big')}, expected {magic}")
    dims = tuple(int(d) for d in np.frombuffer(raw, dtype=">i4", count=ndim, offset=4))
    offset = 4 + 4 * ndim
    if len(raw) - offset != int(np.prod(dims)):
        raise UserError(f"{path}: IDX header says {dims} but the file holds {len(raw) - offset} bytes")
    return np.frombuffer(raw, dtype=np.uint8, offset=offset).reshape(dims)


def find_files(directory: Path) -> dict[str, Path] | None:
    """The four files in ``directory`` (``.gz`` or already extracted), or None if any is missing."""
    found = {}
    for key, stem in FILES.items():
        path = next((p for p in (directory / f"{stem}.gz", directory / stem) if p.is_file()), None)
        if path is None:
            return None
        found[key] = path
    return found


def _download(spec: DataSpec) -> Path:
    import torchvision

    root = spec_root(spec)
    try:
        torchvision.datasets.FashionMNIST(str(root), train=True, download=True)
    except Exception as exc:  # network errors come in many types; the user needs one line
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataNotFoundError(f"fashion_mnist: download into {root} failed: {msg}") from exc
    return root / "FashionMNIST" / "raw"


@register_dataset("fashion_mnist")
def load_fashion_mnist(spec: DataSpec) -> RawDataset:
    searched = candidate_dirs(spec, extra=[DEBIAN_DIR], subdirs=["FashionMNIST/raw"])
    files = next((f for f in map(find_files, searched) if f is not None), None)
    if files is None and spec.download:
        files = find_files(_download(spec))
    if files is None:
        raise DataNotFoundError(
            f"fashion_mnist: files not found in {', '.join(map(str, searched))}; install the Debian package "
            f"dataset-fashion-mnist (apt-get install dataset-fashion-mnist), put the four .gz files "
            f"({', '.join(s + '.gz' for s in FILES.values())}) in {searched[0]}, or set data.download: true"
        )
    arrays = {
        key: read_idx(path, IMAGES_MAGIC if key.endswith("images") else LABELS_MAGIC) for key, path in files.items()
    }
    for split in ("train", "test"):
        images, labels = arrays[f"{split}_images"], arrays[f"{split}_labels"]
        if len(images) != len(labels):
            raise UserError(f"fashion_mnist: {split} images {images.shape} and labels {labels.shape} do not match")
    return RawDataset(
        train_images=torch.from_numpy(arrays["train_images"].copy()).unsqueeze(1),
        train_labels=torch.from_numpy(arrays["train_labels"].astype(np.int64)),
        test_images=torch.from_numpy(arrays["test_images"].copy()).unsqueeze(1),
        test_labels=torch.from_numpy(arrays["test_labels"].astype(np.int64)),
        num_classes=10,
        class_names=CLASS_NAMES,
        hflip=True,  # garments are left-right symmetric enough
        crop_padding=2,  # 4 erases too much of a 28px garment for short runs
        native_size=int(arrays["train_images"].shape[-1]),
        default_size=int(arrays["train_images"].shape[-1]),
        mean=(0.2860,),  # the standard statistics of the 60000 training images
        std=(0.3530,),
    )
