"""Batches of an ``ImageSource`` read ahead in torch ``DataLoader`` workers, in an order given by the caller.

The caller (``BatchLoader``, or the one-off pass that fills the decode cache) decides the batches, so the
order, the crops and the flips are drawn exactly as for in-memory data; the workers only read (decode, or
copy out of the cache) the rows of each batch: a ``batch_sampler`` over the known order, each batch read
with one ``__getitems__`` call. Workers stay up between epochs (``persistent_workers``); on CUDA, batches
arrive in pinned memory and are moved with ``non_blocking``. ``workers=0`` reads in the calling process.
The DataLoader's own per-pass seed is drawn from a private generator: drawn from the global one, it would
shift the model's initialisation whenever a load decodes. A worker's decode error comes back as a value
and is raised here as the one-line ``UserError`` it was (DataLoader would wrap it in a worker traceback).
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import torch
from torch.utils.data import DataLoader, Dataset

from recipesearch.data.source import ImageSource, MemmapSource
from recipesearch.errors import UserError

if TYPE_CHECKING:
    from recipesearch.data.raw import RawDataset

READ_AHEAD = 2  # batches in flight per worker (DataLoader's prefetch_factor)


class _Failure:
    """A worker's ``UserError``, carried back as data."""

    def __init__(self, message: str):
        self.message = message


class _Rows(Dataset):
    def __init__(self, source: ImageSource):
        self.source = source

    def __len__(self) -> int:
        return len(self.source)

    def __getitems__(self, rows: list[int]) -> torch.Tensor | _Failure:
        try:
            return self.source[torch.as_tensor(rows, dtype=torch.int64)]
        except UserError as exc:
            return _Failure(str(exc))


def _as_is(batch: torch.Tensor | _Failure) -> torch.Tensor | _Failure:
    return batch


class _Plan:
    """The batch sampler: the current epoch's batches, replaced by ``Prefetcher.batches`` before each pass."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)


class Prefetcher:
    """``batches(rows_per_batch)`` yields ``source[rows]`` for each, on ``device``, read by ``workers``."""

    def __init__(self, source: ImageSource, workers: int = 0, device: torch.device | str = "cpu"):
        self.source, self.workers, self.device = source, max(0, int(workers)), torch.device(device)
        self._plan = _Plan()
        self._loader = self._new_loader()

    def _new_loader(self) -> DataLoader:
        return DataLoader(
            _Rows(self.source), batch_sampler=self._plan, num_workers=self.workers, collate_fn=_as_is,
            pin_memory=self.device.type == "cuda", persistent_workers=self.workers > 0,
            prefetch_factor=READ_AHEAD if self.workers > 0 else None,
            generator=torch.Generator(),  # DataLoader draws a seed per pass: never from the global RNG
        )

    def batches(self, rows: Sequence[torch.Tensor | list[int]]) -> Iterator[torch.Tensor]:
        """uint8 [B, C, H, W] per entry of ``rows`` (CPU index tensors or lists), in that order."""
        self._plan.batches = [r.tolist() if isinstance(r, torch.Tensor) else list(r) for r in rows]
        if not self._plan.batches:
            return
        try:
            for batch in self._loader:
                if isinstance(batch, _Failure):
                    raise UserError(batch.message)
                yield batch.to(self.device, non_blocking=True) if self.device.type != "cpu" else batch
        except BaseException:  # an error, or the caller's stop (GeneratorExit): the pass is left mid-way
            # Its persistent workers are ended now, with a fresh loader for any next pass. Left to the garbage
            # collector, their shutdown could run inside some import: 5 s of join timeout per worker.
            if self.workers:
                self._loader = self._new_loader()
            raise


def read_chunks(source: ImageSource, workers: int = 0, chunk: int = 256) -> Iterator[tuple[int, torch.Tensor]]:
    """``(start, source[start:start + chunk])`` through the whole source, in order, read by ``workers``."""
    n = len(source)
    starts = range(0, n, chunk)
    rows = [list(range(s, min(s + chunk, n))) for s in starts]
    yield from zip(starts, Prefetcher(source, workers).batches(rows))


def read_all(source: ImageSource, workers: int = 0) -> torch.Tensor:
    """Every image of ``source`` as one uint8 tensor (the in-memory path of a source)."""
    out = torch.empty(source.shape, dtype=torch.uint8)
    for start, batch in read_chunks(source, workers):
        out[start : start + len(batch)] = batch
    return out


def materialize(raw: RawDataset, workers: int = 0) -> RawDataset:
    """``raw`` with its ``ImageSource`` splits read whole into uint8 tensors (a cache file read in one go, or
    every file decoded by ``workers``); tensors are kept as they are."""
    def whole(images: torch.Tensor | ImageSource) -> torch.Tensor:
        if isinstance(images, MemmapSource):
            return images.read_all()
        return read_all(images, workers) if isinstance(images, ImageSource) else images

    return replace(raw, train_images=whole(raw.train_images), test_images=whole(raw.test_images))
