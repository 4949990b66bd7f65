"""Gradients and the optimizer step: SAM's perturbation, gradient clipping, layer freezing, BN biases' LR."""
from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor, nn

from recipesearch.algorithms import bn_bias_lr as _bn_bias_lr
from recipesearch.algorithms import gradient_clipping as _clipping
from recipesearch.algorithms import layer_freezing as _freezing
from recipesearch.algorithms import sam as _sam

__all__ = [
    "clip_gradients",
    "freeze_fraction",
    "freeze_layers",
    "sam_perturb",
    "sam_restore",
    "scale_bn_bias_grads",
]


def sam_perturb(params: list[Tensor], rho: float = 0.05, epsilon: float = 1e-12) -> list[Tensor]:
    """SAM's ascent (Foret et al. 2021): move each param by ``rho * g / ||g||``; returns the moves.

    A SAM step: backward, ``e = sam_perturb(params)``, zero the grads, forward and backward again,
    ``sam_restore(params, e)``, then the optimizer step (with the perturbed point's gradient).

    Args:
        params: parameters that all have a ``.grad``; the norm is global over them.
        rho: radius of the neighbourhood.
        epsilon: guards the division by the gradient norm.

    Example:
        >>> w = torch.zeros(2, requires_grad=True)
        >>> w.grad = torch.tensor([3.0, 4.0])
        >>> e = sam_perturb([w], rho=0.5)
        >>> w.detach()
        tensor([0.3000, 0.4000])
    """
    return _sam.sam_perturb(params, rho, epsilon)


def sam_restore(params: list[Tensor], e: list[Tensor]) -> None:
    """Undo ``sam_perturb``: every param back to where it was.

    Args:
        params: the parameters given to ``sam_perturb``.
        e: the moves it returned.

    Example:
        >>> w = torch.zeros(2, requires_grad=True)
        >>> w.grad = torch.tensor([3.0, 4.0])
        >>> sam_restore([w], sam_perturb([w], rho=0.5))
        >>> w.detach()
        tensor([0., 0.])
    """
    _sam.sam_restore(params, e)


def clip_gradients(params: Iterable[Tensor], mode: str = "norm", threshold: float | None = None) -> None:
    """Gradient clipping in place: by global norm, by value, or adaptive per unit (AGC, Brock et al. 2021).

    Under fp16 with a ``GradScaler``, call ``scaler.unscale_(optimizer)`` first.

    Args:
        params: parameters whose ``.grad`` is clipped (those without one are skipped).
        mode: ``"norm"``, ``"value"`` or ``"adaptive"``.
        threshold: the limit; None is 1.0 for norm and value, 0.01 for adaptive.

    Example:
        >>> w = torch.zeros(2, requires_grad=True)
        >>> w.grad = torch.tensor([3.0, 4.0])
        >>> clip_gradients([w], mode="norm", threshold=1.0)
        >>> w.grad
        tensor([0.6000, 0.8000])
    """
    _clipping.clip_gradients(params, mode, threshold)  # type: ignore[arg-type]


def freeze_fraction(progress: float, freeze_start: float = 0.5, freeze_level: float = 1.0) -> float:
    """Layer freezing's schedule (Composer): the fraction of layers frozen at ``progress`` of training.

    Args:
        progress: fraction of training done, 0 to 1.
        freeze_start: no layer is frozen before this fraction of training.
        freeze_level: fraction of layers frozen at the end, reached linearly.

    Example:
        >>> [freeze_fraction(p) for p in (0.25, 0.75, 1.0)]
        [0.0, 0.5, 1.0]
    """
    return _freezing.freeze_fraction(progress, freeze_start, freeze_level)


def freeze_layers(model: nn.Module, optimizer: torch.optim.Optimizer | None, fraction: float) -> int:
    """FreezeOut (Brock et al. 2017): freeze the first ``fraction`` of the parameter-owning layers.

    The classifier (last layer) never freezes; frozen parameters lose their gradient and optimizer state.

    Args:
        model: the network, changed in place.
        optimizer: its optimizer, whose state of the frozen parameters is dropped (or None).
        fraction: share of the layers to have frozen; a larger one later freezes more.

    Example:
        >>> from torch import nn
        >>> model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2))
        >>> freeze_layers(model, None, 0.7), [m.weight.requires_grad for m in model]
        (2, [False, False, True])
    """
    return _freezing.freeze_layers(model, optimizer, fraction)


def scale_bn_bias_grads(model: nn.Module, scale: float = 64.0) -> int:
    """airbench94's BN-bias LR (Jordan 2024): multiply the gradients of every BatchNorm bias by ``scale``.

    Call it between backward and an SGD step: the step of those biases is then that of an LR ``scale``
    times larger (SGD's momentum and step are linear in the gradient; Adam would divide it away).
    Returns how many biases had a gradient.

    Args:
        model: the network.
        scale: the BN biases' LR over the other parameters' (airbench94: 64).

    Example:
        >>> from torch import nn
        >>> model = nn.Sequential(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(2))
        >>> model(torch.rand(4, 1, 3, 3)).sum().backward()
        >>> before = model[1].bias.grad.clone()
        >>> scale_bn_bias_grads(model, 64.0), torch.allclose(model[1].bias.grad, 64 * before)
        (1, True)
    """
    return _bn_bias_lr.scale_gradients(_bn_bias_lr.bn_biases(model), scale)
