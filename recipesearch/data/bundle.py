"""``load_data(spec, device) -> DataBundle``: decode once, resize once, split, keep uint8 on the device.

Steps: 1) decode with the registered loader (cached per process by the fields that change the pixels),
2) resize train and test to ``image_size`` once (bilinear; antialiased when shrinking), 3) per-channel
mean/std from the training images unless the dataset has standard ones, 4) carve the validation split and
then the subset, both stratified and seeded by ``split_seed``, 5) move to ``device`` (cached by the whole
spec + device). Keeping the dataset as device-resident uint8 tensors follows airbench
(KellerJordan/cifar10-airbench). Tensors in a cached bundle are shared: treat them as read-only.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from recipesearch.data.registry import ENV_DATA, RawDataset, get_dataset
from recipesearch.data.spec import DataSpec
from recipesearch.data.split import fraction_count, stratified_mask
from recipesearch.errors import ConfigError


@dataclass(frozen=True)
class ImageTensors:
    """One split: ``images`` uint8 [N, C, H, W] and ``labels`` int64 [N] on the same device."""

    images: torch.Tensor
    labels: torch.Tensor

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def to(self, device: torch.device | str) -> ImageTensors:
        return ImageTensors(self.images.to(device), self.labels.to(device))


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


_RAW_CACHE: dict[tuple, RawDataset] = {}
_BUNDLE_CACHE: dict[tuple, DataBundle] = {}


def clear_cache() -> None:
    """Forget every decoded dataset and bundle (tests, or to free memory)."""
    _RAW_CACHE.clear()
    _BUNDLE_CACHE.clear()


MAX_MEMORY_SHARE = 0.5  # decoded images may take at most this share of the machine's memory


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _check_fits(raw: RawDataset, size: int) -> None:
    """Refuse an image size whose decoded dataset would not fit (``image_size: 1024`` on digits is ~2 GB of
    uint8 and far more once training starts) before decoding it."""
    n = raw.train_images.shape[0] + raw.test_images.shape[0]
    need = n * raw.channels * size * size
    total = _memory_bytes()
    if total and need > MAX_MEMORY_SHARE * total:
        raise ConfigError("data.image_size", f"{size} px: {n} images take {need / 2**30:.1f} GiB decoded, more than "
                                             f"{MAX_MEMORY_SHARE:.0%} of this machine's {total / 2**30:.0f} GiB")


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


def channel_stats(images: torch.Tensor, chunk: int = 4096) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per-channel mean and std of uint8 images, in 0..1 units (float64 sums, chunked)."""
    c = images.shape[1]
    total = torch.zeros(c, dtype=torch.float64)
    total_sq = torch.zeros(c, dtype=torch.float64)
    for start in range(0, images.shape[0], chunk):
        x = images[start : start + chunk].transpose(0, 1).reshape(c, -1).to(torch.float64)
        total += x.sum(1)
        total_sq += (x * x).sum(1)
    count = images.numel() // c
    mean = total / count
    std = (total_sq / count - mean * mean).clamp_min(0).sqrt()
    std = torch.where(std > 0, std, torch.full_like(std, 255.0))  # a constant channel: avoid dividing by 0
    return tuple((mean / 255).tolist()), tuple((std / 255).tolist())


def split_train(
    images: torch.Tensor, labels: torch.Tensor, val_fraction: float, subset: float, seed: int
) -> tuple[ImageTensors, ImageTensors | None]:
    """(train, val): ``round(val_fraction * N)`` held out, then ``round(subset * rest)`` kept (>= 1)."""
    gen = torch.Generator().manual_seed(seed)
    keep = torch.ones(labels.numel(), dtype=torch.bool)
    val = None
    if val_fraction > 0:
        order = torch.randperm(labels.numel(), generator=gen)
        held = stratified_mask(labels, order, fraction_count(labels.numel(), val_fraction))
        val = ImageTensors(images[held], labels[held])
        keep = ~held
    if subset < 1:
        rest = keep.nonzero().squeeze(1)
        count = max(1, fraction_count(rest.numel(), subset))
        chosen = stratified_mask(labels[rest], torch.randperm(rest.numel(), generator=gen), count)
        keep = torch.zeros_like(keep)
        keep[rest[chosen]] = True
    train = ImageTensors(images, labels) if bool(keep.all()) else ImageTensors(images[keep], labels[keep])
    return train, val


def _raw(spec: DataSpec) -> RawDataset:
    key = (spec.name, spec.root, spec.image_size, spec.channels, spec.download, os.environ.get(ENV_DATA))
    if key not in _RAW_CACHE:
        _RAW_CACHE[key] = get_dataset(spec.name)(spec)
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
    """The dataset of ``spec`` as uint8 tensors on ``device``; decoded once per process."""
    device = torch.device(device)
    key = (spec.model_dump_json(), str(device), os.environ.get(ENV_DATA))
    if key in _BUNDLE_CACHE:
        return _BUNDLE_CACHE[key]
    raw = _raw(spec)
    size = spec.image_size or raw.default_size
    _check_fits(raw, size)
    train_images = resize_images(raw.train_images, size)
    test_images = resize_images(raw.test_images, size)
    if raw.mean is not None and raw.std is not None:
        mean, std = raw.mean, raw.std
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
    )
    _BUNDLE_CACHE[key] = bundle
    return bundle
