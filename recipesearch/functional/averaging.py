"""Weight averaging: EMA of the weights, Lookahead's slow weights, BatchNorm statistics after SWA."""
from __future__ import annotations

from collections.abc import Iterable

import torch  # noqa: F401 (the docstring examples use torch without importing it)
from torch import Tensor, nn

from recipesearch.algorithms import ema as _ema
from recipesearch.algorithms import lookahead as _lookahead
from recipesearch.algorithms import swa as _swa

__all__ = [
    "ema_smoothing",
    "ema_update",
    "lookahead_sync",
    "recompute_bn",
]


def ema_update(ema_model: nn.Module, model: nn.Module, smoothing: float) -> None:
    """EMA of the weights: ``ema = smoothing * ema + (1 - smoothing) * model``; buffers are copied.

    Call it after every optimizer step on a ``copy.deepcopy(model)`` made at the start; evaluate the copy.

    Args:
        ema_model: the averaged copy, updated in place.
        model: the network being trained.
        smoothing: weight on the past per update (``ema_smoothing`` turns a half-life into it).

    Example:
        >>> import copy
        >>> from torch import nn
        >>> model = nn.Linear(1, 1, bias=False)
        >>> _ = nn.init.zeros_(model.weight)
        >>> ema = copy.deepcopy(model).requires_grad_(False)
        >>> _ = nn.init.ones_(model.weight)
        >>> ema_update(ema, model, smoothing=0.75)
        >>> float(ema.weight)
        0.25
    """
    _ema.ema_update(ema_model, model, smoothing)


def ema_smoothing(half_life_steps: float, update_interval: int = 1) -> float:
    """The per-update smoothing of an EMA whose weight on the past halves every ``half_life_steps`` steps.

    ``recipesearch train`` uses a half-life of ``half_life * total_steps`` (a fraction of the run).

    Args:
        half_life_steps: optimizer steps after which an update's weight halves.
        update_interval: the EMA is updated every this many steps.

    Example:
        >>> ema_smoothing(1), round(ema_smoothing(10), 4)
        (0.5, 0.933)
    """
    return _ema.smoothing_for(half_life_steps, update_interval)


def lookahead_sync(slow: list[Tensor], fast: list[Tensor], alpha: float = 0.5) -> None:
    """Lookahead (Zhang et al. 2019): ``slow += alpha * (fast - slow)``, then ``fast = slow``; every k steps.

    Args:
        slow: the slow copies (start as clones of ``fast``), updated in place.
        fast: the trained tensors (parameters; BN buffers too if wanted), reset in place.
        alpha: step of the slow weights toward the fast ones.

    Example:
        >>> slow, fast = [torch.zeros(2)], [torch.ones(2)]
        >>> lookahead_sync(slow, fast, alpha=0.5)
        >>> slow[0], fast[0]
        (tensor([0.5000, 0.5000]), tensor([0.5000, 0.5000]))
    """
    _lookahead.lookahead_sync(slow, fast, alpha)


def recompute_bn(model: nn.Module, batches: Iterable) -> None:
    """Reset BatchNorm's running statistics to their average over ``batches`` (after SWA's averaging).

    Args:
        model: the network (the averaged one, for SWA), in place.
        batches: an iterable of inputs or of ``(inputs, targets)`` pairs.

    Example:
        >>> from torch import nn
        >>> model = nn.Sequential(nn.BatchNorm2d(1))
        >>> recompute_bn(model, [(torch.full((4, 1, 2, 2), 3.0), None)])
        >>> float(model[0].running_mean)
        3.0
    """
    _swa.recompute_bn(model, batches)
