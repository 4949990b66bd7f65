"""Binary cross-entropy on one-hot (or soft) targets instead of softmax cross-entropy.

Wightman et al. 2021, "ResNet strikes back: An improved training procedure in timm".
"""
from __future__ import annotations

import math
from functools import partial

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, Field
from torch import nn

from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.label_smoothing import as_distribution
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.algorithms.selective_backprop import PER_SAMPLE_LOSS_KEY
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


def per_sample_bce(outputs: torch.Tensor, targets: torch.Tensor, num_classes: int) -> torch.Tensor:
    """[B]: binary cross-entropy with logits summed over the K classes of each sample."""
    dist = as_distribution(targets, num_classes).to(torch.float32)
    # float32: the loss is a sum of K terms, too coarse in bf16/fp16 under autocast
    return F.binary_cross_entropy_with_logits(outputs.float(), dist, reduction="none").sum(1)


def bce_loss(outputs: torch.Tensor, targets: torch.Tensor, num_classes: int) -> torch.Tensor:
    """Sum over classes, mean over the batch — not averaged over classes, which would divide the
    gradient by K and silently change the effective learning rate (timm's BinaryCrossEntropy keeps
    the per-class mean; Composer's soft BCE sums, as here)."""
    return per_sample_bce(outputs, targets, num_classes).mean()


def last_linear(model: nn.Module) -> nn.Linear | None:
    """The final classifier (the model contract: the last ``nn.Linear`` in the model)."""
    found = None
    for m in model.modules():
        if isinstance(m, nn.Linear):
            found = m
    return found


def init_classifier_bias(model: nn.Module, num_classes: int) -> None:
    """Bias -log(K): every sigmoid starts near 1/K, the prior of a one-hot target, so the first steps
    are not spent pushing K - 1 outputs from 0.5 down to 0 (a huge initial loss)."""
    fc = last_linear(model)
    if fc is not None and fc.bias is not None:
        with torch.no_grad():
            fc.bias.fill_(-math.log(num_classes))


class BCELossParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    init_bias: bool = Field(True, description="set the classifier bias to -log(K) at the start")


@register_algorithm
class BCELoss(Algorithm):
    name = "bce_loss"
    description = "Binary cross-entropy per class instead of softmax cross-entropy"
    citation = "Wightman et al. 2021, ResNet strikes back: An improved training procedure in timm"
    events = frozenset({Event.INIT})
    order = 50
    Params = BCELossParams

    def apply(self, event: Event, state: State) -> None:
        state.loss_fn = partial(bce_loss, num_classes=state.num_classes)
        state.extra[PER_SAMPLE_LOSS_KEY] = partial(per_sample_bce, num_classes=state.num_classes)
        if self.params.init_bias:
            init_classifier_bias(state.model, state.num_classes)
