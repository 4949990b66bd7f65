"""Per-batch transforms: mixing, erasing, augmenting, resizing and subsampling a batch ``[B, C, H, W]``.

The trainer runs these after the batch is loaded, before the forward pass.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn

from recipesearch.algorithms import alternating_flip as _alternating_flip
from recipesearch.algorithms import brightness_contrast as _brightness_contrast
from recipesearch.algorithms import colout as _colout
from recipesearch.algorithms import cutmix as _cutmix
from recipesearch.algorithms import cutout as _cutout
from recipesearch.algorithms import mixup as _mixup
from recipesearch.algorithms import progressive_resizing as _resizing
from recipesearch.algorithms import proxy_selection as _proxy
from recipesearch.algorithms import randaugment as _randaugment
from recipesearch.algorithms import selective_backprop as _selective
from recipesearch.algorithms import translate as _translate
from recipesearch.algorithms import trivialaugment as _trivial
from recipesearch.algorithms._augment_ops import RANDAUGMENT_SPACE, WIDE_SPACE

__all__ = [
    "alternating_flip_batch",
    "brightness_contrast_batch",
    "colout_batch",
    "cutmix_batch",
    "cutout_batch",
    "first_epoch_flips",
    "mixup_batch",
    "progressive_resize",
    "randaugment_batch",
    "resize_batch",
    "select_by_proxy",
    "select_using_loss",
    "translate_batch",
    "trivialaugment_batch",
]

Stats = Sequence[float] | Tensor


def mixup_batch(x: Tensor, y: Tensor, alpha: float, num_classes: int,
                generator: torch.Generator | None = None) -> tuple[Tensor, Tensor, float]:
    """MixUp (Zhang et al. 2018): blend the batch with a permutation of itself; returns ``(x, targets, lam)``.

    One ``lam ~ Beta(alpha, alpha)`` per batch, folded to ``max(lam, 1 - lam)``; the targets are the same
    blend of the two samples' label distributions ``[B, K]``: train with a soft-target cross-entropy.

    Args:
        x: the batch ``[B, C, H, W]``.
        y: class indices ``[B]`` or distributions ``[B, K]``.
        alpha: Beta concentration; larger mixes more.
        num_classes: K.
        generator: random source (the global torch RNG when None).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> x, y, lam = mixup_batch(torch.rand(4, 1, 8, 8), torch.tensor([0, 1, 2, 3]), 0.2, 10, g)
        >>> y.shape, torch.allclose(y.sum(1), torch.ones(4)), 0.5 <= lam <= 1
        (torch.Size([4, 10]), True, True)
    """
    return _mixup.mixup_batch(x, y, alpha, num_classes, generator)


def cutmix_batch(x: Tensor, y: Tensor, alpha: float, num_classes: int,
                 generator: torch.Generator | None = None) -> tuple[Tensor, Tensor, float]:
    """CutMix (Yun et al. 2019): paste one box from a permutation of the batch; returns ``(x, targets, lam)``.

    ``lam`` is the share of each image that is still its own; the targets mix by it (``[B, K]``).

    Args:
        x: the batch ``[B, C, H, W]``.
        y: class indices ``[B]`` or distributions ``[B, K]``.
        alpha: Beta(alpha, alpha) for the kept area; 1 is uniform.
        num_classes: K.
        generator: random source (the global torch RNG when None).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> x, y, lam = cutmix_batch(torch.rand(4, 3, 8, 8), torch.tensor([0, 1, 2, 3]), 1.0, 4, g)
        >>> x.shape, y.shape, 0 <= lam <= 1
        (torch.Size([4, 3, 8, 8]), torch.Size([4, 4]), True)
    """
    return _cutmix.cutmix_batch(x, y, alpha, num_classes, generator)


def brightness_contrast_batch(x: Tensor, brightness: float = 0.2, contrast: float = 0.2,
                              generator: torch.Generator | None = None, *, mean: Stats | None = None,
                              std: Stats | None = None) -> Tensor:
    """Brightness/contrast jitter (the 2025 CIFAR-10 record): each image's brightness, then contrast, scaled by its
    own factor, uniform in 1 ± strength, in [0, 1] pixel units.

    Args:
        x: the batch ``[B, C, H, W]``, normalised with ``mean``/``std`` (None: already in [0, 1]).
        brightness: strength of the brightness factor, in [0, 1] (0: unchanged).
        contrast: strength of the contrast factor, in [0, 1] (0: unchanged).
        generator: random source (the global torch RNG when None).
        mean: the per-channel mean ``x`` was normalised with (None: ``x`` is in [0, 1]).
        std: the per-channel std ``x`` was normalised with.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> out = brightness_contrast_batch(torch.full((2, 1, 4, 4), 0.5), 0.2, 0.0, g)
        >>> out.shape, bool(((out >= 0.4) & (out <= 0.6)).all())
        (torch.Size([2, 1, 4, 4]), True)
    """
    return _brightness_contrast.brightness_contrast_batch(x, brightness, contrast, generator, mean=mean, std=std)


def cutout_batch(x: Tensor, length_fraction: float = 0.5, generator: torch.Generator | None = None) -> Tensor:
    """Cutout (DeVries & Taylor 2017): zero one random square per image (the mean, once normalised).

    Args:
        x: the batch ``[B, C, H, W]``, normalised.
        length_fraction: side of the square as a fraction of ``min(H, W)``.
        generator: random source (the global torch RNG when None).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> out = cutout_batch(torch.ones(2, 1, 8, 8), 0.5, g)
        >>> out.shape, bool((out == 0).any()), bool((out == 1).any())
        (torch.Size([2, 1, 8, 8]), True, True)
    """
    return _cutout.cutout_batch(x, length_fraction, generator)


def first_epoch_flips(num_images: int, seed: int) -> Tensor:
    """Alternating flip (Jordan 2024, airbench94): which training images epoch 0 mirrors, a random half.

    Drawn from ``seed`` alone, so every data-parallel rank draws the same; give it to
    ``alternating_flip_batch``.

    Args:
        num_images: the training images, N.
        seed: the run's seed.

    Example:
        >>> flips = first_epoch_flips(1000, seed=0)
        >>> flips.dtype, flips.shape, 400 < int(flips.sum()) < 600
        (torch.bool, torch.Size([1000]), True)
    """
    return _alternating_flip.first_epoch_flips(num_images, seed)


def alternating_flip_batch(x: Tensor, rows: Tensor, epoch: int, first_epoch_flips: Tensor) -> Tensor:
    """Alternating flip (Jordan 2024, airbench94): mirror the images epoch ``epoch`` mirrors, in place of a random flip.

    Epoch 0 mirrors the images ``first_epoch_flips`` names, odd epochs the others, even epochs those again:
    each image is seen both ways in any two consecutive epochs.

    Args:
        x: the batch ``[B, C, H, W]``, not flipped yet.
        rows: the batch's rows of the training set ``[B]`` (indices into ``first_epoch_flips``).
        epoch: the epoch, counted from 0.
        first_epoch_flips: bool ``[N]`` from ``first_epoch_flips``.

    Example:
        >>> x = torch.arange(4.0).view(1, 1, 1, 4).repeat(2, 1, 1, 1)
        >>> flips = torch.tensor([True, False])
        >>> alternating_flip_batch(x, torch.tensor([0, 1]), 0, flips)[:, 0, 0]
        tensor([[3., 2., 1., 0.],
                [0., 1., 2., 3.]])
        >>> alternating_flip_batch(x, torch.tensor([0, 1]), 1, flips)[:, 0, 0]
        tensor([[0., 1., 2., 3.],
                [3., 2., 1., 0.]])
    """
    return _alternating_flip.alternating_flip_batch(x, rows, epoch, first_epoch_flips)


def translate_batch(x: Tensor, pixels: int = 2, padding_mode: str = "reflect",
                    generator: torch.Generator | None = None) -> Tensor:
    """Translate (Jordan 2024, airbench94): shift each image by up to ``pixels`` px each way, borders reflected.

    A random crop of the image padded by ``pixels``; use it instead of the usual zero-padded crop.

    Args:
        x: the batch ``[B, C, H, W]`` (uint8 or float).
        pixels: the largest shift in each direction (airbench94: 2); less than H and W.
        padding_mode: ``"reflect"`` (airbench94) or ``"zeros"`` (the usual random crop).
        generator: random source (the global torch RNG when None).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> out = translate_batch(torch.rand(4, 3, 8, 8), 2, generator=g)
        >>> out.shape
        torch.Size([4, 3, 8, 8])
    """
    return _translate.random_translate(x, pixels, generator, padding_mode)  # type: ignore[arg-type]


def colout_batch(x: Tensor, p_row: float = 0.15, p_col: float = 0.15,
                 generator: torch.Generator | None = None) -> Tensor:
    """ColOut (Composer): drop random rows and columns, the same for the whole batch; a smaller batch.

    Args:
        x: the batch ``[B, C, H, W]``.
        p_row: fraction of rows dropped (``ceil((1 - p_row) * H)`` stay).
        p_col: fraction of columns dropped.
        generator: random source (the global torch RNG when None).

    Example:
        >>> colout_batch(torch.rand(2, 3, 20, 20), p_row=0.25, p_col=0.5).shape
        torch.Size([2, 3, 15, 10])
    """
    return _colout.colout_batch(x, p_row, p_col, generator)


def randaugment_batch(x: Tensor, depth: int = 1, severity: float = 9, generator: torch.Generator | None = None,
                      *, mean: Stats | None = None, std: Stats | None = None) -> Tensor:
    """RandAugment (Cubuk et al. 2020): ``depth`` random ops per image at random strength up to ``severity``.

    Args:
        x: the batch ``[B, C, H, W]``, normalised with ``mean``/``std``, or in [0, 1] when they are None.
        depth: ops applied in sequence to each image.
        severity: largest op strength on a 0..10 scale.
        generator: random source (the global torch RNG when None).
        mean: per-channel mean the batch was normalised with (0..1 units).
        std: per-channel standard deviation the batch was normalised with.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> x = torch.rand(4, 3, 16, 16)
        >>> out = randaugment_batch(x, depth=2, severity=9, generator=g)
        >>> out.shape == x.shape, out.dtype == x.dtype
        (True, True)
    """
    return _randaugment.randaugment_batch(x, depth, severity, generator, mean=mean, std=std,
                                          space=RANDAUGMENT_SPACE)


def trivialaugment_batch(x: Tensor, generator: torch.Generator | None = None, *, mean: Stats | None = None,
                         std: Stats | None = None, wide: bool = True) -> Tensor:
    """TrivialAugment (Müller & Hutter 2021): one random op per image at a uniformly random strength.

    Args:
        x: the batch ``[B, C, H, W]``, normalised with ``mean``/``std``, or in [0, 1] when they are None.
        generator: random source (the global torch RNG when None).
        mean: per-channel mean the batch was normalised with (0..1 units).
        std: per-channel standard deviation the batch was normalised with.
        wide: the Wide op ranges (TA Wide), else RandAugment's.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> x = torch.rand(4, 3, 16, 16)
        >>> trivialaugment_batch(x, g, mean=[0.5] * 3, std=[0.25] * 3).shape
        torch.Size([4, 3, 16, 16])
    """
    return _trivial.trivialaugment_batch(x, generator, mean=mean, std=std,
                                         space=WIDE_SPACE if wide else RANDAUGMENT_SPACE)


def resize_batch(x: Tensor, y: Tensor, scale: float, mode: str = "resize", size_increment: int = 1,
                 generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    """Shrink a batch to ``scale`` of its height and width; classification targets pass through.

    Args:
        x: the batch ``[B, C, H, W]``.
        y: its targets, returned unchanged.
        scale: target side as a fraction of the current one (1 or more: unchanged).
        mode: ``"resize"`` (antialiased bilinear) or ``"crop"`` (one random window for the whole batch).
        size_increment: sides are rounded to a multiple of this many pixels.
        generator: random source of the crop's position (the global torch RNG when None).

    Example:
        >>> x, y = resize_batch(torch.rand(2, 3, 32, 32), torch.tensor([0, 1]), scale=0.5)
        >>> x.shape
        torch.Size([2, 3, 16, 16])
    """
    return _resizing.resize_batch(x, y, scale, mode, size_increment, generator)


def progressive_resize(x: Tensor, y: Tensor, progress: float, initial_scale: float = 0.5,
                       delay_fraction: float = 0.4, finetune_fraction: float = 0.2, mode: str = "resize",
                       size_increment: int = 4) -> tuple[Tensor, Tensor]:
    """Progressive resizing (Composer): the batch at the size its schedule gives at ``progress`` of training.

    ``initial_scale`` until ``delay_fraction`` of training, a linear ramp, full size for the last
    ``finetune_fraction`` (the schedule ``recipesearch train`` follows, on steps taken / total steps).

    Args:
        x: the batch ``[B, C, H, W]``.
        y: its targets, returned unchanged.
        progress: fraction of training done, 0 to 1.
        initial_scale: image side at the start, as a fraction.
        delay_fraction: share of training at the initial scale.
        finetune_fraction: share of training at full size, at the end.
        mode: ``"resize"`` or ``"crop"``.
        size_increment: sides are rounded to a multiple of this many pixels.

    Example:
        >>> x, y = torch.rand(2, 1, 16, 16), torch.tensor([0, 1])
        >>> [progressive_resize(x, y, p)[0].shape[-1] for p in (0.0, 0.6, 0.9)]
        [8, 12, 16]
    """
    scale = _resizing.scale_at(progress, initial_scale, delay_fraction, finetune_fraction)
    return _resizing.resize_batch(x, y, scale, mode, size_increment)


def select_using_loss(x: Tensor, y: Tensor, model: nn.Module,
                      loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None, keep: float = 0.5,
                      scale_factor: float = 1.0) -> tuple[Tensor, Tensor]:
    """Selective backprop (Jiang et al. 2019): keep the samples with the highest loss, in batch order.

    Scores the batch with a forward pass without gradients (BatchNorm's running statistics untouched).

    Args:
        x: the batch ``[B, C, H, W]``.
        y: class indices ``[B]`` or distributions ``[B, K]``.
        model: the network being trained.
        loss_fn: ``(outputs, targets) -> [B]`` per-sample loss; None is per-sample cross-entropy.
        keep: fraction of the batch kept (at least one sample).
        scale_factor: image scale of the scoring pass (below 1 is cheaper).

    Example:
        >>> from torch import nn
        >>> model = nn.Sequential(nn.Flatten(), nn.Linear(16, 3))
        >>> x, y = select_using_loss(torch.rand(8, 1, 4, 4), torch.zeros(8, dtype=torch.long), model, keep=0.25)
        >>> x.shape, y.shape
        (torch.Size([2, 1, 4, 4]), torch.Size([2]))
    """
    return _selective.select_using_loss(x, y, model, loss_fn, keep, scale_factor)


def select_by_proxy(x: Tensor, y: Tensor, proxy: nn.Module, optimizer: torch.optim.Optimizer, keep: float = 0.5,
                    loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """Proxy-selected batches (airbench96): one training step of a small ``proxy`` on the whole batch, and the
    samples it found hardest (highest per-sample loss in that step), in batch order, for the main model.

    Args:
        x: the batch ``[B, C, H, W]``.
        y: class indices ``[B]`` or distributions ``[B, K]``.
        proxy: the small model trained alongside (e.g. the model at a quarter of its width).
        optimizer: the proxy's optimizer.
        keep: fraction of the batch kept (at least one sample).
        loss_fn: ``(outputs, targets) -> [B]`` per-sample loss; None is per-sample cross-entropy.

    Example:
        >>> from torch import nn
        >>> proxy = nn.Sequential(nn.Flatten(), nn.Linear(16, 3))
        >>> opt = torch.optim.SGD(proxy.parameters(), lr=0.1)
        >>> x, y = select_by_proxy(torch.rand(8, 1, 4, 4), torch.zeros(8, dtype=torch.long), proxy, opt, keep=0.5)
        >>> x.shape, y.shape
        (torch.Size([4, 1, 4, 4]), torch.Size([4]))
    """
    return _proxy.select_by_proxy(x, y, proxy, optimizer, keep, loss_fn)
