"""Sharpness-Aware Minimization: step with the gradient taken at the worst nearby point w + e.

Foret et al. 2021, "Sharpness-Aware Minimization for Efficiently Improving Generalization" (ICLR);
the every-``interval``-steps variant is Composer's SAM (cuts the second pass's cost by ``1/interval``).
"""
from __future__ import annotations

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor

from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


@torch.no_grad()
def sam_perturb(params: list[Tensor], rho: float, epsilon: float = 1e-12) -> list[Tensor]:
    """Move each param by e = rho * g / ||g|| (global norm over all ``params``); returns the e's.

    Every param must have a ``.grad``. e is invariant to the scale of g, so a GradScaler's scaled
    gradients give the same e as unscaled ones (no unscale_ needed here).
    """
    grads = [p.grad for p in params]
    norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    e = torch._foreach_mul(grads, rho / (norm + epsilon))  # one scalar tensor: no host sync
    torch._foreach_add_(params, e)
    return e


@torch.no_grad()
def sam_restore(params: list[Tensor], e: list[Tensor]) -> None:
    """Undo ``sam_perturb``: w = (w + e) - e."""
    torch._foreach_sub_(params, e)


class SAMParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rho: float = Field(0.05, gt=0, le=1, description="radius of the neighbourhood (paper: 0.05 on CIFAR)")
    epsilon: float = Field(1e-12, gt=0, description="guards the division by the gradient norm")
    interval: int = Field(1, ge=1, description="perturb every N steps; others are plain steps (cost 1 + 1/N)")


@register_algorithm
class SAM(Algorithm):
    name = "sam"
    description = "Sharpness-aware minimisation: second forward/backward at w + rho*g/|g|; flatter minima"
    citation = "Foret et al. 2021, Sharpness-Aware Minimization for Efficiently Improving Generalization"
    events = frozenset({Event.AFTER_BACKWARD})
    order = 10  # before gradient_clipping (60): clipping must see the gradient the step will use
    Params = SAMParams

    def match(self, event: Event, state: State) -> bool:
        return event in self.events and state.step % self.params.interval == 0 and not state.skip_step

    def apply(self, event: Event, state: State) -> None:
        params = [p for p in state.model.parameters() if p.grad is not None]
        if not params:
            return
        if state.grad_scaler is not None and not _finite(params):
            return  # fp16 overflow: the scaler will skip this step anyway; e would be NaN
        e = sam_perturb(params, self.params.rho, self.params.epsilon)
        # 1) gradient at w + e (forward_backward zeroes the grads first), 2) back to w; the optimizer then
        # steps from w with the perturbed point's gradient.
        state.forward_backward()
        sam_restore(params, e)


def _finite(params: list[Tensor]) -> bool:
    norms = torch.stack(torch._foreach_norm([p.grad for p in params]))
    return bool(torch.isfinite(norms).all())
