"""``imagefolder``: your own images, laid out as torchvision's ``ImageFolder`` expects.

``<root>/train/<class>/<image>`` and ``<root>/test/<class>/<image>`` (or ``val/`` instead of ``test/``);
classes are the sorted sub-folder names of ``train/``. Every image is decoded with PIL, converted to RGB
(or to grayscale "L" with ``data.channels: 1``) and resized to ``data.image_size`` (default 32) square.
Decoded once into the decode cache (``recipesearch/data/decode_cache.py``; ``data.cache: false`` skips
it), then kept as uint8 tensors in memory or, when they would not fit (``data.in_memory``), read by rows
while training (``recipesearch/data/source.py``): the only dataset that streams.
Layout and extensions follow ``torchvision.datasets.folder`` (pytorch/vision).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from recipesearch.data.decode_cache import cache_key, cache_root, cached_sources, fingerprint
from recipesearch.data.raw import RawDataset, as_labels
from recipesearch.data.registry import register_dataset, register_streaming, spec_root
from recipesearch.data.source import MODES, FileSource, MemmapSource
from recipesearch.data.spec import DataSpec
from recipesearch.data.stream import materialize, read_all
from recipesearch.errors import ConfigError, DataNotFoundError, UserError

DEFAULT_SIZE = 32
DEFAULT_CHANNELS = 3
EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
__all__ = ["MODES", "ImageFolder", "decode_images", "list_images", "load_imagefolder", "materialize"]


def list_images(split_dir: Path, class_to_idx: dict[str, int]) -> list[tuple[Path, int]]:
    """(path, label) of every image under ``split_dir/<class>/`` (recursively), in sorted order."""
    samples = []
    for cls, label in class_to_idx.items():
        for dirpath, dirnames, filenames in os.walk(split_dir / cls, followlinks=True):
            dirnames.sort()
            samples += [(Path(dirpath) / f, label) for f in sorted(filenames) if f.lower().endswith(EXTENSIONS)]
    return samples


def decode_images(
    samples: list[tuple[Path, int]], size: int, channels: int = DEFAULT_CHANNELS, workers: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Images uint8 [N, channels, size, size] (RGB or grayscale, bilinear with antialiasing), labels int64 [N]."""
    images = read_all(FileSource([p for p, _ in samples], size, channels), workers)
    return images, as_labels([label for _, label in samples])


@dataclass(frozen=True)
class ImageFolder:
    """An image folder listed but not decoded: enough to say how big it is decoded, and to open it."""

    root: Path
    classes: tuple[str, ...]
    train: list[tuple[Path, int]]
    test: list[tuple[Path, int]]
    size: int
    channels: int

    @property
    def count(self) -> int:
        return len(self.train) + len(self.test)

    @property
    def decoded_bytes(self) -> int:
        return self.count * self.channels * self.size * self.size

    def open(self, cache: bool = True, workers: int = 0) -> RawDataset:
        """The dataset with ``ImageSource`` splits: the decode cache's (decoding into it first on a miss), or
        the files themselves with ``cache=False``. ``workers`` decode the one-off pass that fills the cache."""
        train: FileSource | MemmapSource = FileSource([p for p, _ in self.train], self.size, self.channels)
        test: FileSource | MemmapSource = FileSource([p for p, _ in self.test], self.size, self.channels)
        mean = std = None
        if cache:
            fields = {"dataset": "imagefolder", "root": str(self.root.resolve()), "size": self.size,
                      "channels": self.channels, "train": fingerprint(self.root, self.train),
                      "test": fingerprint(self.root, self.test)}
            try:
                sources, meta = cached_sources(cache_key(fields), {"train": train, "test": test},
                                               {**fields, "classes": list(self.classes)}, workers)
            except OSError as exc:
                raise ConfigError("data.cache", f"cannot write the decode cache under {cache_root()}: {exc}; free "
                                                f"space there, point $RECIPESEARCH_CACHE elsewhere, or set "
                                                f"data.cache: false") from None
            train, test = sources["train"], sources["test"]
            mean, std = tuple(meta["mean"]), tuple(meta["std"])
        return RawDataset(
            train_images=train,
            train_labels=as_labels([label for _, label in self.train]),
            test_images=test,
            test_labels=as_labels([label for _, label in self.test]),
            num_classes=len(self.classes),
            class_names=self.classes,
            hflip=True,  # the default; data.hflip: false for images whose mirror is another class
            crop_padding=max(1, self.size // 8),  # 4 px at 32 px, as for CIFAR
            native_size=self.size,
            default_size=self.size,
            mean=mean,
            std=std,
        )


MIN_CLASSES = 2  # one class trains to 100 % accuracy and says nothing


def _few_classes(train_dir: Path, classes: list[str], with_images: list[str] | None = None) -> str | None:
    """Why ``classes`` (the class folders of ``train_dir``; ``with_images``: those holding an image) are too
    few to train a classifier on, or None."""
    found = classes if with_images is None else with_images
    if len(found) >= MIN_CLASSES:
        return None
    if not classes:
        what = "no class folder"
    elif with_images is None or len(with_images) == len(classes):
        what = f"{len(classes)} class folder ({classes[0]})"
    else:
        empty = sorted(set(classes) - set(with_images))
        what = (f"images of {len(found)} class only ({', '.join(found) or 'none'}; no images in "
                f"{', '.join(empty)})")
    return (f"imagefolder: {train_dir} has {what}: a classifier needs at least {MIN_CLASSES} classes, one "
            f"sub-folder of images each (one class would train to 100 % accuracy and mean nothing)")


def class_problem(spec: DataSpec) -> str | None:
    """Too few class folders under ``data.root``'s train/, checked without listing a single image (a search
    space's load, ``space/loading.py``); None also where the folder is not here to look at (a cluster's data
    may be on its nodes only: ``list_imagefolder`` checks again there)."""
    train_dir = spec_root(spec) / "train"
    try:
        classes = sorted(e.name for e in os.scandir(train_dir) if e.is_dir())
    except OSError:
        return None
    return _few_classes(train_dir, classes)


@register_streaming("imagefolder")
def list_imagefolder(spec: DataSpec) -> ImageFolder:
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
    problem = _few_classes(train_dir, classes, sorted({classes[label] for _, label in train}))
    if problem and train:  # no image at all: the "no images" line below says more
        raise ConfigError("data.root", problem)
    if not train or not test:
        empty = train_dir if not train else test_dir
        raise DataNotFoundError(f"imagefolder: no images ({', '.join(EXTENSIONS)}) under {empty}; set data.root")
    return ImageFolder(root, tuple(classes), train, test, spec.image_size or DEFAULT_SIZE,
                       spec.channels or DEFAULT_CHANNELS)


@register_dataset("imagefolder")
def load_imagefolder(spec: DataSpec) -> RawDataset:
    """Decoded whole into uint8 tensors (through the decode cache unless ``data.cache: false``)."""
    return materialize(list_imagefolder(spec).open(cache=spec.cache is not False, workers=spec.workers or 0))
