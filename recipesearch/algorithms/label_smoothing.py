"""Label smoothing: train on (1 - s) * one_hot + s / K instead of hard labels.

Szegedy et al. 2016, "Rethinking the Inception Architecture for Computer Vision".
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, Field

from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


def as_distribution(targets: torch.Tensor, num_classes: int) -> torch.Tensor:
    """Class indices [B] → one-hot float [B, K]; distributions pass through unchanged."""
    if targets.ndim == 2:
        return targets
    return F.one_hot(targets, num_classes).float()


def smooth_labels(targets: torch.Tensor, num_classes: int, smoothing: float) -> torch.Tensor:
    """Mix the target distribution with the uniform one: (1 - s) * y + s / K."""
    return as_distribution(targets, num_classes) * (1 - smoothing) + smoothing / num_classes


class LabelSmoothingParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    smoothing: float = Field(0.1, ge=0, lt=1, description="mass moved to the uniform distribution")


@register_algorithm
class LabelSmoothing(Algorithm):
    name = "label_smoothing"
    description = "Soften targets towards uniform; regularises, pays off at longer budgets"
    citation = "Szegedy et al. 2016, Rethinking the Inception Architecture"
    events = frozenset({Event.AFTER_DATALOADER})
    order = 30  # after mixing (mixup/cutmix at 20) so the mixed distribution is smoothed
    Params = LabelSmoothingParams

    def apply(self, event: Event, state: State) -> None:
        state.y = smooth_labels(state.y, state.num_classes, self.params.smoothing)
