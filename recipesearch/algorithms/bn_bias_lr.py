"""BatchNorm-bias learning rate: the shifts of BatchNorm layers train with an LR ``scale`` times the rest's.

K. Jordan 2024, "94% on CIFAR-10 in 3.29 Seconds on a Single GPU" (arXiv 2404.00498): airbench94 gives its
BN biases 64 times the learning rate of the other parameters (its BN scales are fixed at 1; its weight decay
per step is the same for both, as the decoupled decay of this library's optimizers is).

How: each step, after backward, the gradients of every BatchNorm bias are multiplied by ``scale``. SGD's
momentum buffer and step are linear in the gradient, so this is that SGD step with the LR times ``scale``,
for any schedule, and it leaves the optimizer's groups alone (Muon steps these with its SGD part). Adam
divides the scale away, so a recipe whose BN biases go to AdamW is refused. It runs last after backward:
after SAM's second pass and after gradient clipping (the clipped gradient is then scaled, as a larger LR
would). Under fp16 the GradScaler's later unscale divides both factors alike. Costs one ``_foreach_mul_``
over the BN biases a step.
"""
from __future__ import annotations

from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn

from recipesearch.algorithms._surgery import unwrap
from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


def bn_biases(model: nn.Module) -> list[Tensor]:
    """The trainable shift (bias) of every BatchNorm layer of ``model``, in module order."""
    return [m.bias for m in model.modules()
            if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.bias is not None and m.bias.requires_grad]


@torch.no_grad()
def scale_gradients(params: list[Tensor], scale: float) -> int:
    """Multiply the gradient of each of ``params`` that has one by ``scale``; returns how many had one."""
    grads = [p.grad for p in params if p.grad is not None]
    if grads:
        torch._foreach_mul_(grads, scale)
    return len(grads)


class BNBiasLRParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scale: float = Field(64.0, gt=0, le=1024, description="BN biases' LR / the other parameters' (airbench94: 64)")


@register_algorithm
class BNBiasLR(Algorithm):
    name = "bn_bias_lr"
    description = "Train BatchNorm biases with scale x the LR (airbench94: 64x), by scaling their SGD gradients"
    citation = "Jordan 2024, 94% on CIFAR-10 in 3.29 Seconds on a Single GPU (arXiv 2404.00498), bias_scaler"
    # INIT: refuse what would ignore it. FIT_START: after INIT's surgery (ghost BN replaces the layers).
    events = frozenset({Event.INIT, Event.FIT_START, Event.AFTER_BACKWARD})
    order = 70  # after SAM (10) and gradient clipping (60): the step's final gradient
    Params = BNBiasLRParams

    def __init__(self, **params: Any):
        super().__init__(**params)
        self.biases: list[Tensor] = []

    def match(self, event: Event, state: State) -> bool:
        return event in self.events and not (event is Event.AFTER_BACKWARD and state.skip_step)

    def apply(self, event: Event, state: State) -> None:
        if event is Event.INIT:
            opt = state.recipe.optimizer
            if "adamw" in (opt.name, opt.muon_rest if opt.name == "muon" else None):
                raise ConfigError(f"algorithms.{self.name}", "scales the gradient of BN biases, which SGD turns into a "
                                                             "larger step and AdamW normalises away: use optimizer sgd "
                                                             "(or muon with muon_rest sgd)")
            return
        if event is Event.FIT_START:
            self.biases = bn_biases(unwrap(state.model))
            if not self.biases:
                raise ConfigError(f"algorithms.{self.name}", f"model {state.recipe.model.name} has no trainable "
                                                             "BatchNorm bias")
            return
        scale_gradients(self.biases, self.params.scale)
