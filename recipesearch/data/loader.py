"""``BatchLoader``: shuffled, augmented, normalised batches from uint8 tensors already on the device.

As in airbench (KellerJordan/cifar10-airbench): one ``randperm`` per epoch, index the uint8 tensor, crop
and flip the uint8 batch (4x less memory traffic than float), then normalise to float32 in one op.
Streamed data (``images`` an ``ImageSource``, ``recipesearch/data/source.py``) goes through the same code:
the order, crops and flips are drawn identically, only each batch's uint8 images come from DataLoader
workers reading ahead (``recipesearch/data/stream.py``) instead of from indexing a tensor, so a streamed
run yields the same batches, bit for bit, as an in-memory one with the same seed.

A method may change the augmentation at FIT_START, after the trainer built the loader: airbench94's
translate (``padding_mode`` reflect, its own ``crop_padding``) and alternating flip (``first_epoch_flips``).
``position()`` carries these settings and the epoch's index, so a run resumed from a checkpoint (whose fresh
loader was built from the recipe, and whose FIT_START does not fire again) augments as the uncut run did.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch

from recipesearch.data.augment import (
    PaddingMode,
    Stats,
    alternating_flip_mask,
    mirror_where,
    normalize,
    normalize_params,
    random_crop,
    random_hflip,
)
from recipesearch.data.source import ImageSource, is_source
from recipesearch.data.stream import Prefetcher

if TYPE_CHECKING:
    from recipesearch.data.bundle import ImageTensors

Batch = tuple[torch.Tensor, torch.Tensor]


class BatchLoader:
    """Iterate ``(x float32 [B, C, H, W] normalised, y int64 [B])``, one epoch per ``iter()``.

    Reproducible: two loaders whose generators start from the same seed yield identical batches. With
    ``drop_last`` the last incomplete batch is dropped, except when it is the only one (tiny subsets).
    ``image_size`` is read by a progressive-resizing hook; the loader itself never resizes.

    With ``augment``: a random crop of ``crop_padding`` px (padding ``padding_mode``), then, with ``hflip``, a
    mirror of a random half of the batch, or, when ``first_epoch_flips`` is set, of the images that
    ``alternating_flip_mask`` names for the epoch (the epoch counted from the loader's first ``iter()``).
    """

    def __init__(
        self,
        images: torch.Tensor | ImageSource,
        labels: torch.Tensor,
        batch_size: int,
        mean: Stats,
        std: Stats,
        augment: bool = True,
        hflip: bool = True,
        crop_padding: int = 4,
        shuffle: bool = True,
        drop_last: bool = True,
        generator: torch.Generator | None = None,
        channels_last: bool = False,
        workers: int = 0,  # streamed images only: DataLoader workers reading ahead (0: read in this process)
    ):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if images.shape[0] != labels.shape[0]:
            raise ValueError(f"{images.shape[0]} images but {labels.shape[0]} labels")
        self.images, self.labels = images, labels
        self.batch_size = batch_size
        self.mean, self.std = mean, std
        self.augment, self.hflip, self.crop_padding = augment, hflip, crop_padding
        self.padding_mode: PaddingMode = "zeros"
        self.first_epoch_flips: torch.Tensor | None = None  # bool [N] on self.device: alternating flips, else random
        self.epochs_begun = 0  # iter() calls so far: the next epoch's index
        self.shuffle, self.drop_last = shuffle, drop_last
        self.generator = generator
        self.channels_last = channels_last
        self.image_size = int(images.shape[-1])
        self.device = labels.device  # where batches are produced: the images' (in memory) or the labels' (streamed)
        self._params = normalize_params(mean, std, self.device)
        self._stream = Prefetcher(images, workers, self.device) if is_source(images) else None
        self._epoch_order: torch.Tensor | None = None  # the epoch under way (``position``)
        self._epoch_index = 0
        self._next_batch = 0

    @classmethod
    def from_split(cls, split: ImageTensors, batch_size: int, mean: Stats, std: Stats, **kwargs: object) -> BatchLoader:
        """A loader over a ``DataBundle`` split (``bundle.train``); keywords as in the constructor."""
        return cls(split.images, split.labels, batch_size, mean, std, **kwargs)  # type: ignore[arg-type]

    @property
    def num_samples(self) -> int:
        return int(self.images.shape[0])

    def __len__(self) -> int:
        n, bs = self.num_samples, self.batch_size
        return max(n // bs, 1 if n else 0) if self.drop_last else -(-n // bs)

    def _order(self) -> torch.Tensor | None:
        if not self.shuffle:
            return None
        device = self.generator.device if self.generator is not None else self.device
        perm = torch.randperm(self.num_samples, generator=self.generator, device=device)
        return perm.to(self.device)

    def __iter__(self) -> Iterator[Batch]:
        epoch, self.epochs_begun = self.epochs_begun, self.epochs_begun + 1
        yield from self._epoch(self._order(), 0, epoch)

    def augmentation(self) -> dict[str, Any]:
        """The augmentation settings as they are now (the recipe's, or what a method set at FIT_START)."""
        return {"augment": self.augment, "hflip": self.hflip, "crop_padding": self.crop_padding,
                "padding_mode": self.padding_mode, "first_epoch_flips": self.first_epoch_flips}

    def position(self) -> dict[str, Any]:
        """Where the epoch under way stands, for a mid-epoch checkpoint: its order, its index, the index of the
        next batch, the generator's state (after the last batch's crops and flips) and the augmentation."""
        return {"order": self._epoch_order, "epoch": self._epoch_index, "next_batch": self._next_batch,
                "generator": self.generator.get_state() if self.generator is not None else None,
                "augmentation": self.augmentation()}

    def resume(self, position: dict[str, Any]) -> Iterator[Batch]:
        """The rest of the epoch that ``position()`` was taken in: the batches the first iterator would have
        yielded next, bit for bit, augmented as they would have been."""
        if self.generator is not None and position.get("generator") is not None:
            self.generator.set_state(position["generator"].cpu())  # a generator's state is a host tensor
        settings = dict(position.get("augmentation") or {})  # absent: a checkpoint from before it was kept
        flips = settings.pop("first_epoch_flips", None)
        for key, value in settings.items():
            setattr(self, key, value)
        self.first_epoch_flips = flips.to(self.device) if flips is not None else None
        epoch = int(position.get("epoch", 0))
        self.epochs_begun = epoch + 1
        order = position.get("order")
        return self._epoch(order.to(self.device) if order is not None else None, int(position["next_batch"]), epoch)

    def _flip(self, x: torch.Tensor, rows: torch.Tensor | slice, epoch: int) -> torch.Tensor:
        if self.first_epoch_flips is None:
            return random_hflip(x, 0.5, self.generator)
        return mirror_where(x, alternating_flip_mask(self.first_epoch_flips, rows, epoch))

    def _epoch(self, order: torch.Tensor | None, start: int, epoch: int) -> Iterator[Batch]:
        self._epoch_order, self._epoch_index, self._next_batch = order, epoch, start
        n, bs = self.num_samples, self.batch_size
        streamed = self._stream.batches(self._rows(order, start)) if self._stream is not None else None
        for i in range(start, len(self)):
            stop = min((i + 1) * bs, n)
            idx = slice(i * bs, stop) if order is None else order[i * bs : stop]
            x = next(streamed) if streamed is not None else self.images[idx]
            y = self.labels[idx]
            if self.augment:
                x = random_crop(x, self.crop_padding, self.generator, self.padding_mode)
                if self.hflip:
                    x = self._flip(x, idx, epoch)
            x = normalize(x, self.mean, self.std, self._params)
            if self.channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            self._next_batch = i + 1
            yield x, y

    def _rows(self, order: torch.Tensor | None, start: int) -> list[torch.Tensor]:
        """The rows of batches ``start..`` of an epoch, as host index tensors (one copy of ``order`` to the
        host per epoch: on CUDA that is one sync per epoch, not per step)."""
        n, bs = self.num_samples, self.batch_size
        order = order.cpu() if order is not None else torch.arange(n)
        return [order[i * bs : min((i + 1) * bs, n)] for i in range(start, len(self))]


def eval_batches(
    images: torch.Tensor,
    labels: torch.Tensor,
    batch_size: int,
    mean: Stats,
    std: Stats,
    channels_last: bool = False,
    workers: int = 0,
) -> Iterator[Batch]:
    """Every sample once, in order, normalised, without augmentation (last batch may be smaller)."""
    return iter(
        BatchLoader(
            images, labels, batch_size, mean, std,
            augment=False, shuffle=False, drop_last=False, channels_last=channels_last, workers=workers,
        )
    )
