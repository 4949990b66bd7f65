"""Datasets as ``torch.utils.data.Dataset`` splits: Fashion-MNIST from its IDX files, and sklearn's digits.

A recipe names a loader by import path (``data: {name: "atelier.data:fashion_mnist", fraction: 0.1}``);
recipesearch calls it with the ``data`` section's other keys as keyword arguments and reads the splits it
returns. Each split yields ``(image, label)`` items: the image a uint8 tensor [1, H, W], the label an int.
Three attributes tell recipesearch more than the items do: ``classes`` (the class names: their number is
the model's output size), ``targets`` (every label at once, so the labels are not read item by item) and
``hflip`` / ``crop_padding`` (the training augmentation that keeps each image's class).
"""
from __future__ import annotations

import gzip
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset

# Where the Debian package dataset-fashion-mnist installs the four files (`dpkg -L dataset-fashion-mnist`).
FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
FASHION_MNIST_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
FASHION_MNIST_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                         "Ankle boot")
IDX_UNSIGNED_BYTE = 0x08  # the third byte of an IDX magic number: the element type


class LabelledImages(Dataset):
    """In-memory uint8 images [N, 1, H, W] and their labels [N]."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor, classes: Sequence[str], hflip: bool,
                 crop_padding: int):
        if len(images) != len(labels):
            raise ValueError(f"{len(images)} images but {len(labels)} labels")
        self.images = images
        self.targets = labels
        self.classes = list(classes)
        self.hflip = hflip
        self.crop_padding = crop_padding

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        return self.images[index], int(self.targets[index])


def read_idx(path: Path) -> np.ndarray:
    """A gzipped IDX file (LeCun's MNIST format) as a uint8 array of the shape its header declares.

    Header: two zero bytes, the element type (0x08: unsigned byte), the number of dimensions, then one
    big-endian int32 per dimension.
    """
    with gzip.open(path, "rb") as f:
        content = f.read()
    if len(content) < 4 or content[:2] != b"\0\0" or content[2] != IDX_UNSIGNED_BYTE:
        raise ValueError(f"{path} is not an unsigned-byte IDX file")
    ndim = content[3]
    shape = tuple(int(d) for d in np.frombuffer(content, dtype=">i4", count=ndim, offset=4))
    offset = 4 + 4 * ndim
    if len(content) - offset != int(np.prod(shape)):
        raise ValueError(f"{path}: the header says {shape}, the file holds {len(content) - offset} bytes")
    return np.frombuffer(content, dtype=np.uint8, offset=offset).reshape(shape)


def first_of_each_class(labels: torch.Tensor, fraction: float) -> torch.Tensor:
    """Indices of the first ``fraction`` of every class's images, in file order.

    Taking the same share of each class keeps a small subset balanced, and taking the first ones rather
    than a random draw keeps it the same on every machine and in every trial.
    """
    kept = []
    for label in labels.unique():
        rows = (labels == label).nonzero().flatten()
        kept.append(rows[:max(1, round(fraction * len(rows)))])
    return torch.cat(kept).sort().values


def fashion_mnist(root: str | Path | None = None, fraction: float = 1.0) -> dict[str, LabelledImages]:
    """Zalando's Fashion-MNIST (Xiao et al. 2017): 60,000 train and 10,000 test 28x28 grayscale images.

    ``root``: the folder with the four ``.gz`` IDX files (default: where ``apt-get install
    dataset-fashion-mnist`` puts them). ``fraction``: the share of each split kept (train and test, the
    same share of every class), for quick runs: 0.1 is 6,000 train and 1,000 test images.
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    folder = Path(root).expanduser() if root is not None else FASHION_MNIST_DIR
    missing = [name for names in FASHION_MNIST_FILES.values() for name in names if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"Fashion-MNIST: {', '.join(missing)} not found in {folder}; install the Debian "
                                f"package dataset-fashion-mnist (files in {FASHION_MNIST_DIR}) or set data.root to "
                                "a folder holding the four IDX .gz files")
    splits = {}
    for split, (images_file, labels_file) in FASHION_MNIST_FILES.items():
        images = torch.from_numpy(read_idx(folder / images_file).copy())
        labels = torch.from_numpy(read_idx(folder / labels_file).astype(np.int64))
        if images.dim() != 3 or len(images) != len(labels):
            raise ValueError(f"Fashion-MNIST {split}: {list(images.shape)} images for {len(labels)} labels")
        kept = first_of_each_class(labels, fraction)
        # A mirrored garment is the same garment: flips are safe. 2 px of crop padding at 28 px, as is usual.
        splits[split] = LabelledImages(images[kept].unsqueeze(1), labels[kept], FASHION_MNIST_CLASSES, hflip=True,
                                       crop_padding=2)
    return splits


def digits(size: int = 16, test_share: float = 0.2) -> dict[str, LabelledImages]:
    """scikit-learn's 1,797 handwritten 8x8 digits, upsampled to ``size`` pixels: a dataset that needs nothing
    downloaded, for trying a recipe or a space in seconds.

    Every ``round(1 / test_share)``-th image of each class is held out as the test split.
    """
    from sklearn.datasets import load_digits

    if not 0 < test_share < 1:
        raise ValueError(f"test_share must be in (0, 1), got {test_share}")
    if size < 8:
        raise ValueError(f"size must be at least the digits' native 8 pixels, got {size}")
    bunch = load_digits()
    # sklearn's pixels are ink counts 0..16: scaled to 0..255 bytes as a photo's would be
    images = torch.from_numpy(bunch.images).float().mul(255 / 16).unsqueeze(1)
    images = F.interpolate(images, size=(size, size), mode="bilinear", align_corners=False)
    images = images.round().clamp(0, 255).to(torch.uint8)
    labels = torch.from_numpy(bunch.target).long()
    test_mask = torch.zeros(len(labels), dtype=torch.bool)
    every = round(1 / test_share)
    for label in labels.unique():
        rows = (labels == label).nonzero().flatten()
        test_mask[rows[::every]] = True
    classes = [str(d) for d in range(10)]
    # A mirrored 2 is not a 2: no flips. A crop of 1/8 of the size, as for any small image.
    crop_padding = max(1, size // 8)
    return {split: LabelledImages(images[mask], labels[mask], classes, hflip=False, crop_padding=crop_padding)
            for split, mask in (("train", ~test_mask), ("test", test_mask))}
