"""``load_data(spec, device) -> DataBundle``: decode once, resize once, split, keep uint8 on the device.

Steps: 1) decode with the registered loader (cached per process by the fields that change the pixels),
2) resize train and test to ``image_size`` once (bilinear; antialiased when shrinking), 3) per-channel
mean/std from the training images unless the dataset has standard ones, 4) carve the validation split and
then the subset, both stratified and seeded by ``split_seed``, 5) move to ``device`` (cached by the whole
spec + device). Keeping the dataset as device-resident uint8 tensors follows airbench
(KellerJordan/cifar10-airbench). Tensors in a cached bundle are shared: treat them as read-only.

A dataset that can stream (imagefolder) is listed first, not decoded: ``data.in_memory`` then decides
(``recipesearch/data/residency.py``) whether its images are read whole into memory as above, or stay an
``ImageSource`` (the decode cache, or the files) that the loader reads by rows in DataLoader workers; its
labels are in memory either way, and the split, subset and batches are the same.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from recipesearch.data.decode_cache import ENV_CACHE
from recipesearch.data.raw import RawDataset
from recipesearch.data.registry import ENV_DATA, get_dataset, get_streaming
from recipesearch.data.residency import keep_in_memory
from recipesearch.data.source import ImageSource, is_source, strided_sample, take
from recipesearch.data.spec import DataSpec
from recipesearch.data.split import fraction_count, stratified_mask
from recipesearch.data.stats import channel_stats
from recipesearch.data.stream import materialize
from recipesearch.errors import ConfigError

__all__ = ["DataBundle", "ImageTensors", "channel_stats", "clear_cache", "load_data", "resize_images", "split_train"]


@dataclass(frozen=True)
class ImageTensors:
    """One split: ``images`` uint8 [N, C, H, W] and ``labels`` int64 [N] on the same device; or, streamed,
    ``images`` an ``ImageSource`` on the host (read by rows) and ``labels`` on the training device."""

    images: torch.Tensor | ImageSource
    labels: torch.Tensor

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    @property
    def streamed(self) -> bool:
        return is_source(self.images)

    def to(self, device: torch.device | str) -> ImageTensors:
        """The labels (and in-memory images) on ``device``; a source stays where it is: the loader moves its
        batches."""
        images = self.images if is_source(self.images) else self.images.to(device)
        return ImageTensors(images, self.labels.to(device))


@dataclass(frozen=True)
class DataBundle:
    """Everything training needs from the data; ``mean``/``std`` per channel in 0..1 units."""

    train: ImageTensors
    val: ImageTensors | None
    test: ImageTensors
    num_classes: int
    channels: int
    image_size: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    hflip: bool  # training flips, and a flip keeps the label (flip_tta): data.hflip, else the dataset's
    crop_padding: int  # random-crop padding in pixels at image_size
    name: str
    class_names: tuple[str, ...]
    workers: int = 0  # DataLoader workers reading streamed splits (data.workers); unused in memory

    @property
    def streamed(self) -> bool:
        return self.train.streamed


_RAW_CACHE: dict[tuple, RawDataset] = {}
_BUNDLE_CACHE: dict[tuple, DataBundle] = {}


def clear_cache() -> None:
    """Forget every decoded dataset and bundle (tests, or to free memory)."""
    _RAW_CACHE.clear()
    _BUNDLE_CACHE.clear()


def resize_images(images: torch.Tensor, size: int, chunk: int | None = None) -> torch.Tensor:
    """uint8 [N, C, H, W] -> uint8 [N, C, size, size], bilinear, antialiased when shrinking, in chunks
    (by default of at most ~256 MB of float32 output: a fixed 4096 images at 1024 px was 17 GB)."""
    if images.shape[-2:] == (size, size):
        return images
    if chunk is None:
        chunk = max(1, min(4096, (256 * 2**20) // (4 * images.shape[1] * size * size)))
    shrink = size < images.shape[-1] or size < images.shape[-2]
    out = torch.empty((*images.shape[:2], size, size), dtype=torch.uint8)
    for start in range(0, images.shape[0], chunk):
        x = images[start : start + chunk].float()
        y = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False, antialias=shrink)
        out[start : start + chunk] = y.round_().clamp_(0, 255).to(torch.uint8)
    return out


def split_train(
    images: torch.Tensor | ImageSource, labels: torch.Tensor, val_fraction: float, subset: float, seed: int
) -> tuple[ImageTensors, ImageTensors | None]:
    """(train, val): ``round(val_fraction * N)`` held out, then ``round(subset * rest)`` kept (>= 1).
    ``images`` may be an ``ImageSource``: the splits are then sub-sources of it (nothing is read)."""
    gen = torch.Generator().manual_seed(seed)
    keep = torch.ones(labels.numel(), dtype=torch.bool)
    val = None
    if val_fraction > 0:
        order = torch.randperm(labels.numel(), generator=gen)
        held = stratified_mask(labels, order, fraction_count(labels.numel(), val_fraction))
        val = ImageTensors(take(images, held), labels[held])
        keep = ~held
    if subset < 1:
        rest = keep.nonzero().squeeze(1)
        count = max(1, fraction_count(rest.numel(), subset))
        chosen = stratified_mask(labels[rest], torch.randperm(rest.numel(), generator=gen), count)
        keep = torch.zeros_like(keep)
        keep[rest[chosen]] = True
    train = ImageTensors(images, labels) if bool(keep.all()) else ImageTensors(take(images, keep), labels[keep])
    return train, val


STATS_SAMPLE = 10_000  # streamed without the decode cache: mean/std from this many training images, strided


def default_workers(spec: DataSpec) -> int:
    """``data.workers``, else min(4, this process's torch threads: the trial's CPU share)."""
    return spec.workers if spec.workers is not None else min(4, torch.get_num_threads())


def _raw(spec: DataSpec, device: torch.device) -> RawDataset:
    """The decoded (or, streamed, the opened) dataset, cached per process by what changes the pixels."""
    pixels = (spec.name, spec.root, spec.image_size, spec.channels, spec.download, os.environ.get(ENV_DATA),
              json.dumps(spec.options, sort_keys=True, default=str) if spec.options else None)
    lister = get_streaming(spec.name)
    if lister is None:
        if pixels not in _RAW_CACHE:
            _RAW_CACHE[pixels] = get_dataset(spec.name)(spec)
        raw = _RAW_CACHE[pixels]
        size = spec.image_size or raw.default_size
        count = raw.train_images.shape[0] + raw.test_images.shape[0]
        keep_in_memory(spec.in_memory, count * raw.channels * size * size, count, size, device, can_stream=False)
        return raw
    if ("listing", *pixels) not in _RAW_CACHE:
        _RAW_CACHE[("listing", *pixels)] = lister(spec)
    listing = _RAW_CACHE[("listing", *pixels)]
    in_memory = keep_in_memory(spec.in_memory, listing.decoded_bytes, listing.count, listing.size, device,
                               can_stream=True)
    cache = spec.cache is not False
    key = (*pixels, in_memory, cache, os.environ.get(ENV_CACHE))
    if key not in _RAW_CACHE:
        workers = default_workers(spec)
        workers = workers if workers > 1 else 0  # one worker only adds a process to a one-off pass
        raw = listing.open(cache=cache, workers=workers)
        _RAW_CACHE[key] = materialize(raw, workers) if in_memory else raw
    return _RAW_CACHE[key]


def augment_padding(spec: DataSpec, raw: RawDataset, size: int) -> int:
    """Random-crop padding at ``size``: ``data.crop_padding`` as given, else the dataset's own scaled to ``size``."""
    if spec.crop_padding is None:
        return round(raw.crop_padding * size / raw.default_size) if raw.crop_padding else 0
    if spec.crop_padding >= size:
        raise ConfigError("data.crop_padding", f"{spec.crop_padding} px of padding on {size} px images: a crop could "
                                               f"hold no image at all; use less than {size}")
    return spec.crop_padding


def load_data(spec: DataSpec, device: torch.device | str = "cpu") -> DataBundle:
    """The dataset of ``spec`` as uint8 tensors on ``device`` (or streamed: module docstring); decoded once per
    process (and, through the decode cache, once per machine)."""
    device = torch.device(device)
    key = (spec.model_dump_json(), str(device), os.environ.get(ENV_DATA), os.environ.get(ENV_CACHE))
    if key in _BUNDLE_CACHE:
        return _BUNDLE_CACHE[key]
    raw = _raw(spec, device)
    size = spec.image_size or raw.default_size
    # a source is decoded at its size already
    train_images = raw.train_images if is_source(raw.train_images) else resize_images(raw.train_images, size)
    test_images = raw.test_images if is_source(raw.test_images) else resize_images(raw.test_images, size)
    if raw.mean is not None and raw.std is not None:  # the dataset's standard ones, or the decode cache's
        mean, std = raw.mean, raw.std
    elif is_source(train_images):  # streamed without the cache: a sample, not a decode of everything
        mean, std = channel_stats(strided_sample(train_images, STATS_SAMPLE, "cpu"))
    else:
        mean, std = channel_stats(train_images)  # over all training images, so val/subset don't move it
    train, val = split_train(train_images, raw.train_labels, spec.val_fraction, spec.subset, spec.split_seed)
    crop_padding = augment_padding(spec, raw, size)
    if len(train.labels) < raw.num_classes:
        raise ConfigError("data.subset", f"{spec.subset:g} of train keeps {len(train.labels)} images: fewer than "
                                         f"the {raw.num_classes} classes")
    bundle = DataBundle(
        train=train.to(device),
        val=val.to(device) if val is not None else None,
        test=ImageTensors(test_images, raw.test_labels).to(device),
        num_classes=raw.num_classes,
        channels=raw.channels,
        image_size=size,
        mean=tuple(float(m) for m in mean),
        std=tuple(float(s) for s in std),
        hflip=raw.hflip if spec.hflip is None else spec.hflip,
        crop_padding=crop_padding,
        name=spec.name,
        class_names=raw.class_names,
        workers=default_workers(spec) if is_source(train_images) else 0,
    )
    _BUNDLE_CACHE[key] = bundle
    return bundle
