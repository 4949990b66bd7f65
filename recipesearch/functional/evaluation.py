"""Evaluation and precision: flip (and translate) test-time augmentation, and the autocast dtype of mixed precision."""
from __future__ import annotations

import torch
from torch import Tensor, nn

from recipesearch.algorithms import flip_tta as _flip_tta
from recipesearch.algorithms import mixed_precision as _precision

__all__ = [
    "autocast_dtype",
    "flip_tta_logits",
    "flip_translate_tta_logits",
]


def flip_tta_logits(model: nn.Module, x: Tensor) -> Tensor:
    """Flip test-time augmentation (airbench): the mean of the logits of ``x`` and of its left-right mirror.

    Only for data whose label a horizontal flip keeps (not digits).

    Args:
        model: the network, in eval mode.
        x: the batch ``[B, C, H, W]``.

    Example:
        >>> from torch import nn
        >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 2))
        >>> flip_tta_logits(model, torch.rand(3, 1, 2, 2)).shape
        torch.Size([3, 2])
    """
    return _flip_tta.flip_tta_logits(model, x)


def flip_translate_tta_logits(model: nn.Module, x: Tensor, pixels: int = 1) -> Tensor:
    """airbench94's test-time augmentation (its tta_level 2; Jordan 2024): mirror pairs of ``x`` and of 1-px shifts.

    1/2 of ``flip_tta_logits(model, x)``, 1/4 of it for ``x`` shifted ``pixels`` down and right and 1/4 for
    ``x`` shifted ``pixels`` up and left (borders reflected): six forward passes.

    Args:
        model: the network, in eval mode.
        x: the batch ``[B, C, H, W]``.
        pixels: the diagonal shift (airbench94: 1); 0 is ``flip_tta_logits``.

    Example:
        >>> from torch import nn
        >>> model = nn.Sequential(nn.Flatten(), nn.Linear(16, 2))
        >>> flip_translate_tta_logits(model, torch.rand(3, 1, 4, 4)).shape
        torch.Size([3, 2])
    """
    return _flip_tta.flip_translate_tta_logits(model, x, pixels)


def autocast_dtype(name: str) -> torch.dtype:
    """Mixed precision: the dtype of ``"bf16"`` or ``"fp16"``, for ``torch.autocast(device, dtype=...)``.

    fp16 needs a ``torch.amp.GradScaler`` around backward and the step; bf16 does not.

    Args:
        name: ``"bf16"`` or ``"fp16"``.

    Example:
        >>> autocast_dtype("bf16")
        torch.bfloat16
    """
    return _precision.autocast_dtype(name)
