"""``imagefolder``: your own images, laid out as torchvision's ``ImageFolder`` expects.

``<root>/train/<class>/<image>`` and ``<root>/test/<class>/<image>`` (or ``val/`` instead of ``test/``);
classes are the sorted sub-folder names of ``train/``. Every image is decoded once with PIL, converted to
RGB (or to grayscale "L" with ``data.channels: 1``) and resized to ``data.image_size`` (default 32) square,
then kept as uint8 tensors.
Layout and extensions follow ``torchvision.datasets.folder`` (pytorch/vision).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from recipesearch.data.registry import RawDataset, as_labels, register_dataset, spec_root
from recipesearch.data.spec import DataSpec
from recipesearch.errors import DataNotFoundError, UserError

DEFAULT_SIZE = 32
DEFAULT_CHANNELS = 3
MODES = {1: "L", 3: "RGB"}  # data.channels -> PIL mode
EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def list_images(split_dir: Path, class_to_idx: dict[str, int]) -> list[tuple[Path, int]]:
    """(path, label) of every image under ``split_dir/<class>/`` (recursively), in sorted order."""
    samples = []
    for cls, label in class_to_idx.items():
        for dirpath, dirnames, filenames in os.walk(split_dir / cls, followlinks=True):
            dirnames.sort()
            samples += [(Path(dirpath) / f, label) for f in sorted(filenames) if f.lower().endswith(EXTENSIONS)]
    return samples


def decode_images(
    samples: list[tuple[Path, int]], size: int, channels: int = DEFAULT_CHANNELS
) -> tuple[torch.Tensor, torch.Tensor]:
    """Images uint8 [N, channels, size, size] (RGB or grayscale, bilinear with antialiasing), labels int64 [N]."""
    from PIL import Image

    mode = MODES[channels]
    out = np.empty((len(samples), size, size, channels), dtype=np.uint8)
    for i, (path, _) in enumerate(samples):
        try:
            with Image.open(path) as img:
                pixels = np.asarray(img.convert(mode).resize((size, size), Image.Resampling.BILINEAR))
                out[i] = pixels.reshape(size, size, channels)
        except OSError as exc:
            raise UserError(f"imagefolder: cannot decode {path}: {exc}") from exc
    images = torch.from_numpy(out).permute(0, 3, 1, 2).contiguous()
    return images, as_labels([label for _, label in samples])


@register_dataset("imagefolder")
def load_imagefolder(spec: DataSpec) -> RawDataset:
    root = spec_root(spec)
    train_dir = root / "train"
    test_dir = next((root / s for s in ("test", "val") if (root / s).is_dir()), None)
    if not train_dir.is_dir() or test_dir is None:
        raise DataNotFoundError(
            f"imagefolder: {root} needs train/ and test/ (or val/) folders with one sub-folder of images per "
            f"class; set data.root to such a folder"
        )
    classes = sorted(e.name for e in os.scandir(train_dir) if e.is_dir())
    extra = sorted({e.name for e in os.scandir(test_dir) if e.is_dir()} - set(classes))
    if extra:
        raise UserError(f"imagefolder: {test_dir} has classes missing from {train_dir}: {', '.join(extra)}")
    class_to_idx = {c: i for i, c in enumerate(classes)}
    train, test = list_images(train_dir, class_to_idx), list_images(test_dir, class_to_idx)
    if not train or not test:
        empty = train_dir if not train else test_dir
        raise DataNotFoundError(f"imagefolder: no images ({', '.join(EXTENSIONS)}) under {empty}; set data.root")
    size = spec.image_size or DEFAULT_SIZE
    channels = spec.channels or DEFAULT_CHANNELS
    train_images, train_labels = decode_images(train, size, channels)
    test_images, test_labels = decode_images(test, size, channels)
    return RawDataset(
        train_images=train_images,
        train_labels=train_labels,
        test_images=test_images,
        test_labels=test_labels,
        num_classes=len(classes),
        class_names=tuple(classes),
        hflip=True,  # the default; data.hflip: false for images whose mirror is another class
        crop_padding=max(1, size // 8),  # 4 px at 32 px, as for CIFAR
        native_size=size,
        default_size=size,
    )
