"""Gradient clipping by global norm, by value, or adaptively per unit (AGC).

Pascanu et al. 2013 (norm clipping); Brock et al. 2021, "High-Performance Large-Scale Image Recognition
Without Normalization" (adaptive gradient clipping); Composer's GradientClipping.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor

from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State

ClipMode = Literal["norm", "value", "adaptive"]
DEFAULT_THRESHOLDS: dict[str, float] = {"norm": 1.0, "value": 1.0, "adaptive": 0.01}
_UNSCALED_AT = "grads_unscaled_at_step"  # state.extra key: the step whose grads are already unscaled


def unit_norms(t: Tensor) -> Tensor:
    """Norm per output unit (row of a Linear, filter of a Conv), broadcastable to ``t``; whole tensor if 1-D."""
    if t.ndim <= 1:
        return torch.linalg.vector_norm(t)
    return torch.linalg.vector_norm(t, dim=tuple(range(1, t.ndim)), keepdim=True)


@torch.no_grad()
def adaptive_clip_(params: list[Tensor], clipping: float, eps: float = 1e-3) -> None:
    """AGC (Brock et al. 2021, Eq. 3): scale each unit's grad so ||G_i|| <= clipping * max(||W_i||, eps)."""
    for p in params:
        max_norm = unit_norms(p.detach()).clamp(min=eps) * clipping
        grad_norm = unit_norms(p.grad)
        # min(1, max_norm / ||G||) without a branch: no host sync per parameter.
        p.grad.mul_((max_norm / grad_norm.clamp(min=1e-6)).clamp(max=1.0))


def clip_gradients(params: Iterable[Tensor], mode: ClipMode = "norm", threshold: float | None = None) -> None:
    """Clip the ``.grad`` of ``params`` in place; ``threshold`` None takes the mode's default."""
    params = [p for p in params if p.grad is not None]
    if not params:
        return
    threshold = DEFAULT_THRESHOLDS[mode] if threshold is None else threshold
    if mode == "norm":
        torch.nn.utils.clip_grad_norm_(params, threshold, foreach=True)
    elif mode == "value":
        torch.nn.utils.clip_grad_value_(params, threshold, foreach=True)
    elif mode == "adaptive":
        adaptive_clip_(params, threshold)
    else:
        raise ValueError(f"unknown clipping mode {mode!r}; allowed: norm, value, adaptive")


def unscale_once(state: State) -> None:
    """Unscale fp16 gradients before anything reads their size; at most once per step.

    ``GradScaler.unscale_`` raises when called twice before ``update()``, so every algorithm that needs
    true gradient values goes through this function, which records the step in ``state.extra``.
    Nothing may re-run backward (SAM's second pass) afterwards in the same step: the new gradients would
    be scaled while the scaler believes them unscaled; hence SAM's order (10) before this one (60).
    """
    if state.grad_scaler is None or state.extra.get(_UNSCALED_AT) == state.step:
        return
    state.grad_scaler.unscale_(state.optimizer)
    state.extra[_UNSCALED_AT] = state.step


class GradientClippingParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: ClipMode = Field("norm", description="global norm, per-element value, or adaptive per unit (AGC)")
    threshold: float | None = Field(None, gt=0, description="None: 1.0 for norm and value, 0.01 for adaptive")


@register_algorithm
class GradientClipping(Algorithm):
    name = "gradient_clipping"
    description = "Clip gradients by global norm, value, or adaptively to the weight norm (AGC); stabilises"
    citation = "Pascanu et al. 2013 (norm); Brock et al. 2021, NFNets (adaptive gradient clipping)"
    events = frozenset({Event.AFTER_BACKWARD})
    order = 60  # after SAM (10): clip the gradient the optimizer will actually use
    Params = GradientClippingParams

    def match(self, event: Event, state: State) -> bool:
        # No step follows a skipped batch, and unscaling it would leave the GradScaler "already unscaled"
        # into the next step (update() runs only after a step), where unscale_ would then raise.
        return event in self.events and not state.skip_step

    def apply(self, event: Event, state: State) -> None:
        unscale_once(state)
        clip_gradients(state.model.parameters(), self.params.mode, self.params.threshold)
