"""Datasets of the user's own, named by import path: ``data: {name: "acme.data:load", <option>: ...}``.

The callable at the path is called with the ``data`` section's other keys as keyword options (checked
against its signature; a parameter named ``spec`` also gets the ``DataSpec``). It returns either

- a ``RawDataset`` (the built-in loaders' contract, ``data/raw.py``), or
- the splits as ``torch.utils.data.Dataset`` objects: ``{"train": ds, "test": ds}`` or ``(train, test)``,
  whose items are ``(image, label)`` pairs.

A Dataset is read as an ``ImageSource`` (``DatasetSource``), so it goes where imagefolder's files go: read
whole into memory when it fits (``data.in_memory``, ``data/residency.py``), else streamed a batch at a time
by DataLoader workers. An image may be a PIL image, or a tensor or array of shape [C, H, W], [H, W, C] or
[H, W] (uint8 as is, floats taken as 0..1); every image of a split must have the first one's shape. Labels
are integer class indices in ``0 .. num_classes - 1``; ``num_classes`` is ``len(ds.classes)`` (torchvision's
convention), else ``ds.num_classes``, else the largest training label + 1. Labels are read from
``ds.targets`` when the dataset has them, else item by item. A dataset may set ``hflip`` (default false:
a mirror may change the class) and ``crop_padding`` (default image size // 8) attributes.
"""
from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from recipesearch.data.raw import RawDataset, as_labels
from recipesearch.data.source import ImageSource
from recipesearch.data.stream import read_all
from recipesearch.errors import ConfigError
from recipesearch.plugins import accepted_options, check_options, describe_call_error, missing_required, resolve

FIELD = "data.name"
CHECK_ITEMS = 64  # items of each split read when a search checks a dataset before training (``check_dataset``)


def loader_function(path: str) -> Any:
    fn = resolve(path, FIELD)
    if not callable(fn):
        raise ConfigError(FIELD, f"{path} is a {type(fn).__name__}, not a callable returning the dataset")
    return fn


def check_loader_options(spec: Any) -> None:
    """The options of ``spec`` against its loader's signature, without calling it."""
    fn = loader_function(spec.name)
    options = dict(spec.options or {})
    check_options(fn, options, "data", f"dataset '{spec.name}'", reserved=("spec",))
    supplied = ("spec", "root") if spec.root is not None else ("spec",)
    missing = missing_required(fn, options, supplied)
    if missing:
        raise ConfigError(f"data.{missing[0]}", f"required by {spec.name} and not given")


def call_loader(spec: Any) -> Any:
    """What the user's callable returns for ``spec`` (its options checked against its signature first)."""
    path, options = spec.name, dict(spec.options or {})
    fn = loader_function(path)
    check_loader_options(spec)
    params = accepted_options(fn)[0]
    if "spec" in params:
        options["spec"] = spec
    if "root" in params and spec.root is not None and "root" not in options:
        options["root"] = spec.root  # data.root is ours, and the loader's when it takes one
    try:
        return fn(**options)
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's loader: its error in one line
        raise ConfigError(FIELD, f"{path} raised {describe_call_error(exc)}") from None


def _splits(path: str, value: Any) -> tuple[Any, Any]:
    from torch.utils.data import Dataset

    if isinstance(value, Mapping):
        if not {"train", "test"} <= set(value):
            raise ConfigError(FIELD, f"{path} returned a mapping with keys {sorted(value)}; it needs 'train' and "
                                     "'test'")
        train, test = value["train"], value["test"]
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        train, test = value
    else:
        raise ConfigError(FIELD, f"{path} returned a {type(value).__name__}; expected a RawDataset, "
                                 "{'train': Dataset, 'test': Dataset} or a (train, test) pair")
    for split, ds in (("train", train), ("test", test)):
        if not (isinstance(ds, Dataset) or (hasattr(ds, "__getitem__") and hasattr(ds, "__len__"))):
            raise ConfigError(FIELD, f"{path}: the {split} split is a {type(ds).__name__}, not a torch Dataset")
        if len(ds) == 0:
            raise ConfigError(FIELD, f"{path}: the {split} split is empty")
    return train, test


def image_tensor(image: Any, where: str) -> torch.Tensor:
    """One image as uint8 [C, H, W]."""
    if hasattr(image, "convert") and hasattr(image, "size") and not isinstance(image, (torch.Tensor, np.ndarray)):
        arr = np.asarray(image)  # PIL: [H, W] or [H, W, C]
        t = torch.from_numpy(arr.copy())
        t = t.unsqueeze(0) if t.dim() == 2 else t.permute(2, 0, 1)
    else:
        try:
            t = torch.as_tensor(np.asarray(image)) if not isinstance(image, torch.Tensor) else image.detach().cpu()
        except (TypeError, ValueError):
            raise ConfigError(FIELD, f"{where}: the image is a {type(image).__name__}, not a tensor, array or "
                                     "PIL image") from None
        if t.dim() == 2:
            t = t.unsqueeze(0)
        elif t.dim() == 3 and t.shape[0] not in (1, 3) and t.shape[-1] in (1, 3):
            t = t.permute(2, 0, 1)  # [H, W, C]
        elif t.dim() != 3:
            raise ConfigError(FIELD, f"{where}: image of shape {list(t.shape)}; expected [C, H, W], [H, W, C] or "
                                     "[H, W]")
    if t.dtype == torch.uint8:
        return t.contiguous()
    if t.is_floating_point():
        return (t.float() * 255.0).round_().clamp_(0, 255).to(torch.uint8).contiguous()
    if t.dtype in (torch.int16, torch.int32, torch.int64, torch.int8):
        return t.clamp(0, 255).to(torch.uint8).contiguous()
    raise ConfigError(FIELD, f"{where}: image dtype {t.dtype} is not an image")


def label_value(label: Any, where: str) -> int:
    if isinstance(label, (torch.Tensor, np.ndarray)) and int(np.prod(label.shape)) == 1:
        label = label.item()  # a 0-d or one-element integer tensor/array
    elif isinstance(label, np.generic):
        label = label.item()
    if isinstance(label, bool) or not isinstance(label, numbers.Integral):
        raise ConfigError(FIELD, f"{where}: label {label!r} is a {type(label).__name__}, not an integer class index")
    return int(label)


def _item(ds: Any, row: int, split: str, path: str) -> tuple[Any, Any]:
    try:
        item = ds[row]
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(FIELD, f"{path}: {split} item {row} raised {describe_call_error(exc)}") from None
    if not (isinstance(item, (tuple, list)) and len(item) >= 2):
        raise ConfigError(FIELD, f"{path}: {split} item {row} is a {type(item).__name__}; expected (image, label)")
    return item[0], item[1]


class DatasetSource(ImageSource):
    """A user's Dataset read by rows, each image as uint8 [C, size, size] (resized bilinear when needed);
    every image must have the shape of the split's first."""

    def __init__(self, ds: Any, split: str, path: str, native: tuple[int, int, int], size: int):
        self.ds, self.split, self.path, self.native, self.size = ds, split, path, native, size
        self.shape = (len(ds), native[0], size, size)

    def image(self, row: int) -> torch.Tensor:
        where = f"{self.path}: {self.split} item {row}"
        t = image_tensor(_item(self.ds, row, self.split, self.path)[0], where)
        if tuple(t.shape) != self.native:
            raise ConfigError(FIELD, f"{where} has shape {list(t.shape)}; item 0 has {list(self.native)} (every "
                                     "image of a split must have one shape)")
        if t.shape[-2:] != (self.size, self.size):
            shrink = self.size < t.shape[-1] or self.size < t.shape[-2]
            t = F.interpolate(t[None].float(), size=(self.size, self.size), mode="bilinear", align_corners=False,
                              antialias=shrink)[0].round_().clamp_(0, 255).to(torch.uint8)
        return t

    def _read(self, rows: np.ndarray) -> np.ndarray:
        return torch.stack([self.image(int(r)) for r in rows]).numpy()


def _labels(ds: Any, split: str, path: str) -> torch.Tensor:
    targets = getattr(ds, "targets", None)
    if targets is not None and len(targets) == len(ds):
        values = list(targets.tolist() if hasattr(targets, "tolist") else targets)
    else:
        values = [_item(ds, row, split, path)[1] for row in range(len(ds))]
    return as_labels([label_value(v, f"{path}: {split} item {i}") for i, v in enumerate(values)])


def _num_classes(train: Any, labels: torch.Tensor, path: str) -> tuple[int, tuple[str, ...]]:
    classes = getattr(train, "classes", None)
    if classes is not None and len(classes) > 0:
        return len(classes), tuple(str(c) for c in classes)
    declared = getattr(train, "num_classes", None)
    n = int(declared) if isinstance(declared, numbers.Integral) else int(labels.max()) + 1
    return n, tuple(str(c) for c in range(n))


@dataclass
class UserListing:
    """A user's dataset, its splits opened but not read: enough to say how big it is decoded, and to open it."""

    path: str
    raw: RawDataset | None  # the loader returned a RawDataset: nothing to convert
    train: Any = None
    test: Any = None
    size: int = 0
    native: tuple[int, int, int] = (0, 0, 0)

    @property
    def count(self) -> int:
        return self.raw.train_labels.numel() + self.raw.test_labels.numel() if self.raw else len(self.train) + len(
            self.test)

    @property
    def decoded_bytes(self) -> int:
        if self.raw is not None:
            return 0  # already in memory: the loader decoded it
        return self.count * self.native[0] * self.size * self.size

    def open(self, cache: bool = True, workers: int = 0) -> RawDataset:
        """The dataset with ``DatasetSource`` splits (``cache`` unused: nothing to decode twice)."""
        if self.raw is not None:
            return self.raw
        train_labels = _labels(self.train, "train", self.path)
        test_labels = _labels(self.test, "test", self.path)
        num_classes, names = _num_classes(self.train, train_labels, self.path)
        for split, labels in (("train", train_labels), ("test", test_labels)):
            bad = ((labels < 0) | (labels >= num_classes)).nonzero()
            if bad.numel():
                row = int(bad[0])
                raise ConfigError(FIELD, f"{self.path}: {split} item {row} has label {int(labels[row])}, outside "
                                         f"0..{num_classes - 1} ({num_classes} classes)")
        if num_classes < 2:
            raise ConfigError(FIELD, f"{self.path}: {num_classes} class: a classifier needs at least 2")
        test_native = tuple(image_tensor(_item(self.test, 0, "test", self.path)[0], f"{self.path}: test item 0").shape)
        if test_native != self.native:
            raise ConfigError(FIELD, f"{self.path}: test images have shape {list(test_native)}, train images "
                                     f"{list(self.native)}")
        padding = getattr(self.train, "crop_padding", None)
        return RawDataset(
            train_images=DatasetSource(self.train, "train", self.path, self.native, self.size),
            train_labels=train_labels,
            test_images=DatasetSource(self.test, "test", self.path, self.native, self.size),
            test_labels=test_labels,
            num_classes=num_classes,
            class_names=names,
            hflip=bool(getattr(self.train, "hflip", False)),
            crop_padding=int(padding) if isinstance(padding, int) else max(1, self.size // 8),
            native_size=self.native[-1],
            default_size=self.size,
        )


def user_listing(spec: Any) -> UserListing:
    """``spec``'s user dataset, opened (``data/bundle.py`` reads it whole or streams it)."""
    value = call_loader(spec)
    if isinstance(value, RawDataset):
        return UserListing(spec.name, value)
    train, test = _splits(spec.name, value)
    native = tuple(image_tensor(_item(train, 0, "train", spec.name)[0], f"{spec.name}: train item 0").shape)
    if spec.image_size is None and native[1] != native[2]:
        raise ConfigError("data.image_size", f"{spec.name} gives {native[1]}x{native[2]} images; set data.image_size "
                                             "to train on square ones")
    if native[0] not in (1, 3):
        raise ConfigError(FIELD, f"{spec.name}: images have {native[0]} channels; expected 1 or 3")
    return UserListing(spec.name, None, train, test, spec.image_size or native[1], native)  # type: ignore[arg-type]


def check_dataset(spec: Any, items: int = CHECK_ITEMS) -> RawDataset:
    """Before a search trains: the loader runs, every label is read and checked, and the first ``items`` images
    of each split are read and checked; the opened dataset is returned."""
    listing = user_listing(spec)
    raw = listing.open()
    for images in (raw.train_images, raw.test_images):
        if isinstance(images, ImageSource):
            rows = torch.arange(min(items, len(images)))
            read_all(images.subset(rows), 0)
    return raw
