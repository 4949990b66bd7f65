"""Image sources: a split's images kept off the device and read a batch at a time (``data.in_memory: false``).

A source answers ``source[idx]`` (``idx`` an int64 CPU tensor of rows) with uint8 ``[B, C, H, W]`` on the
host, and has ``shape`` and ``len``, so the loader, the split and the samplers index it as they index an
in-memory uint8 tensor; labels always stay in memory. Two kinds: ``FileSource`` decodes each image file
with PIL when asked (the same per-image function the in-memory path uses, so the pixels are identical) and
``MemmapSource`` reads the decoded-tensor cache (``recipesearch/data/decode_cache.py``) with no decoding
at all. Sources are plain picklable objects: DataLoader workers read them (``recipesearch/data/stream.py``).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from recipesearch.errors import UserError

MODES = {1: "L", 3: "RGB"}  # channels -> PIL mode


def decode_file(path: str | Path, size: int, channels: int) -> np.ndarray:
    """One image file as uint8 [size, size, channels]: PIL, converted to ``MODES[channels]``, resized bilinear."""
    from PIL import Image

    try:
        with Image.open(path) as img:
            pixels = np.asarray(img.convert(MODES[channels]).resize((size, size), Image.Resampling.BILINEAR))
    except OSError as exc:
        raise UserError(f"imagefolder: cannot decode {path}: {exc}") from exc
    return pixels.reshape(size, size, channels)


class ImageSource:
    """Rows of uint8 images read on demand; subclasses implement ``shape`` and ``_read(rows)``."""

    shape: tuple[int, int, int, int]  # [N, C, H, W], as a tensor's

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, idx: torch.Tensor) -> torch.Tensor:
        """uint8 [len(idx), C, H, W] on the host, in the order of ``idx`` (an int64 tensor or a bool mask)."""
        rows = _rows(idx, len(self))
        return torch.from_numpy(self._read(rows))

    def subset(self, idx: torch.Tensor) -> ImageSource:
        """The rows ``idx`` (indices or a bool mask) as a source of their own (a validation split, a subset)."""
        return SubsetSource(self, _rows(idx, len(self)))

    def _read(self, rows: np.ndarray) -> np.ndarray:
        raise NotImplementedError


def _rows(idx: torch.Tensor | np.ndarray | list[int], n: int) -> np.ndarray:
    rows = torch.as_tensor(idx).cpu()
    if rows.dtype == torch.bool:
        rows = rows.nonzero().squeeze(1)
    rows = rows.to(torch.int64).reshape(-1).numpy()
    if rows.size and (rows.min() < 0 or rows.max() >= n):
        raise IndexError(f"rows out of range for a source of {n} images")
    return rows


class FileSource(ImageSource):
    """Image files decoded with ``decode_file`` at ``size`` px and ``channels`` channels, one per row."""

    def __init__(self, paths: list[str], size: int, channels: int):
        self.paths, self.size, self.channels = [str(p) for p in paths], size, channels
        self.shape = (len(self.paths), channels, size, size)

    def _read(self, rows: np.ndarray) -> np.ndarray:
        out = np.empty((len(rows), self.size, self.size, self.channels), dtype=np.uint8)
        for k, row in enumerate(rows):
            out[k] = decode_file(self.paths[row], self.size, self.channels)
        return np.ascontiguousarray(out.transpose(0, 3, 1, 2))


class MemmapSource(ImageSource):
    """A raw uint8 file of ``shape`` ([N, C, H, W], C order), read through ``np.memmap`` (opened lazily, per
    process: workers open their own map)."""

    def __init__(self, path: str | Path, shape: tuple[int, int, int, int]):
        self.path, self.shape = str(path), tuple(int(s) for s in shape)
        self._array: np.memmap | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_array": None}

    def array(self) -> np.memmap:
        if self._array is None:
            self._array = np.memmap(self.path, dtype=np.uint8, mode="r", shape=self.shape)
        return self._array

    def _read(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray(self.array()[rows])

    def read_all(self) -> torch.Tensor:
        """The whole file in memory (the in-memory path on a cache hit)."""
        return torch.from_numpy(np.fromfile(self.path, dtype=np.uint8).reshape(self.shape))


class SubsetSource(ImageSource):
    """Rows ``rows`` of ``base``."""

    def __init__(self, base: ImageSource, rows: np.ndarray):
        self.base, self.rows = base, rows
        self.shape = (len(rows), *base.shape[1:])

    def _read(self, rows: np.ndarray) -> np.ndarray:
        return self.base._read(self.rows[rows])


def is_source(images: object) -> bool:
    return isinstance(images, ImageSource)


def take(images: torch.Tensor | ImageSource, idx: torch.Tensor) -> torch.Tensor | ImageSource:
    """``images[idx]`` for a tensor; the sub-source for a source (nothing is read)."""
    return images.subset(idx) if isinstance(images, ImageSource) else images[idx]


def strided_rows(n: int, count: int) -> torch.Tensor:
    """Up to ``count`` rows at an even stride through ``n``: the rows of ``images[::step][:count]``."""
    step = max(1, n // max(1, count))
    return torch.arange(0, n, step)[:count]


def strided_sample(images: torch.Tensor | ImageSource, count: int, device: torch.device | str) -> torch.Tensor:
    """``images[::step][:count]`` (uint8, on ``device``): the same images from a tensor or a source."""
    rows = strided_rows(images.shape[0], count)
    if isinstance(images, ImageSource):
        return images[rows].to(device)
    step = max(1, images.shape[0] // max(1, count))
    return images[::step][:count]
