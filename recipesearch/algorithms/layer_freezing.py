"""Layer freezing: stop training the earliest layers progressively, cutting their backward cost.

Brock et al. 2017, "FreezeOut: Accelerate Training by Progressively Freezing Layers"; Composer's
LayerFreezing (its freeze_start / freeze_level schedule).
"""
from __future__ import annotations

from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import nn

from recipesearch.algorithms._surgery import unwrap
from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


def trainable_layers(model: nn.Module) -> list[nn.Module]:
    """Modules that own parameters directly, in registration order (the forward order of our models)."""
    return [m for m in model.modules() if any(True for _ in m.parameters(recurse=False))]


def freeze_fraction(progress: float, freeze_start: float, freeze_level: float) -> float:
    """Composer's schedule: 0 until ``freeze_start``, then linear up to ``freeze_level`` at the end."""
    if progress <= freeze_start:
        return 0.0
    return freeze_level * min(1.0, (progress - freeze_start) / (1.0 - freeze_start))


def freeze_layers(model: nn.Module, optimizer: torch.optim.Optimizer | None, fraction: float) -> int:
    """Freeze the first ``int(fraction * L)`` of the L parameter-owning layers; returns how many are frozen.

    The last layer (the classifier) is never frozen, so a backward pass always has something to train.

    Frozen params get ``requires_grad=False``, so autograd computes no gradient for them (and stops the
    backward pass at the first trainable layer); their grad becomes None, which SGD, AdamW and
    DecoupledSGDW's decay all skip, so momentum and weight decay cannot keep moving them. Their
    optimizer state is dropped to free memory. Calling it again with a larger fraction freezes more.
    """
    layers = trainable_layers(model)
    depth = min(int(fraction * len(layers)), len(layers) - 1)
    for layer in layers[:depth]:
        for p in layer.parameters(recurse=False):
            if p.requires_grad:
                p.requires_grad_(False)
                p.grad = None
                if optimizer is not None:
                    optimizer.state.pop(p, None)
    return depth


class LayerFreezingParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    freeze_start: float = Field(0.5, ge=0, lt=1, description="fraction of training before any layer freezes")
    freeze_level: float = Field(1.0, gt=0, le=1, description="fraction of layers frozen by the end of training")


@register_algorithm
class LayerFreezing(Algorithm):
    name = "layer_freezing"
    description = "Progressively freeze the earliest layers in the second half; skips their backward pass"
    citation = "Brock et al. 2017, FreezeOut: Accelerate Training by Progressively Freezing Layers"
    # Checked after every step rather than each epoch so that short (budget-dilated) runs freeze too;
    # the check is a float comparison, the work happens only when one more layer is due.
    events = frozenset({Event.AFTER_STEP})
    order = 50
    Params = LayerFreezingParams

    def __init__(self, **params: Any):
        super().__init__(**params)
        self.frozen = 0
        self.num_layers: int | None = None

    def apply(self, event: Event, state: State) -> None:
        fraction = freeze_fraction(state.progress, self.params.freeze_start, self.params.freeze_level)
        if not fraction:
            return
        model = unwrap(state.model)
        if self.num_layers is None:
            self.num_layers = len(trainable_layers(model))
        if min(int(fraction * self.num_layers), self.num_layers - 1) > self.frozen:
            self.frozen = freeze_layers(model, state.optimizer, fraction)
