"""Targets and losses: label smoothing, and per-class binary cross-entropy with its classifier bias."""
from __future__ import annotations

import torch  # noqa: F401 (the docstring examples use torch without importing it)
from torch import Tensor, nn

from recipesearch.algorithms import bce_loss as _bce
from recipesearch.algorithms import label_smoothing as _smoothing

__all__ = [
    "bce_loss",
    "init_classifier_bias",
    "smooth_labels",
]


def smooth_labels(targets: Tensor, num_classes: int, smoothing: float = 0.1) -> Tensor:
    """Label smoothing (Szegedy et al. 2016): ``(1 - s) * one_hot + s / K``; distributions are smoothed too.

    Args:
        targets: class indices ``[B]`` or distributions ``[B, K]``.
        num_classes: K.
        smoothing: mass moved to the uniform distribution.

    Example:
        >>> smooth_labels(torch.tensor([1]), num_classes=4, smoothing=0.2)
        tensor([[0.0500, 0.8500, 0.0500, 0.0500]])
    """
    return _smoothing.smooth_labels(targets, num_classes, smoothing)


def bce_loss(outputs: Tensor, targets: Tensor, num_classes: int) -> Tensor:
    """Binary cross-entropy per class (Wightman et al. 2021): summed over classes, mean over the batch.

    Pair it with ``init_classifier_bias`` at the start, as ``recipesearch train`` does by default.

    Args:
        outputs: logits ``[B, K]``.
        targets: class indices ``[B]`` or distributions ``[B, K]``.
        num_classes: K.

    Example:
        >>> loss = bce_loss(torch.zeros(2, 4), torch.tensor([0, 3]), num_classes=4)
        >>> round(float(loss), 4)  # 4 * log(2): every sigmoid at 0.5
        2.7726
    """
    return _bce.bce_loss(outputs, targets, num_classes)


def init_classifier_bias(model: nn.Module, num_classes: int) -> None:
    """Set the last ``nn.Linear``'s bias to ``-log(K)``: every sigmoid starts near 1/K (for ``bce_loss``).

    Args:
        model: the network; its last ``nn.Linear`` is the classifier.
        num_classes: K.

    Example:
        >>> from torch import nn
        >>> model = nn.Sequential(nn.Linear(3, 4))
        >>> init_classifier_bias(model, 4)
        >>> round(model[0].bias[0].item(), 4)
        -1.3863
    """
    _bce.init_classifier_bias(model, num_classes)
