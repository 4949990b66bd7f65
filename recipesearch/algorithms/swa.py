"""Stochastic Weight Averaging: average the weights seen at each epoch end of the last part of training.

Izmailov et al. 2018, "Averaging Weights Leads to Wider Optima and Better Generalization" (UAI);
``torch.optim.swa_utils``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from torch import nn
from torch.optim.swa_utils import AveragedModel, update_bn

from recipesearch.algorithms._surgery import unwrap
from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


def swa_lr_factor(
    schedule_factor: Callable[[int], float], start_step: int, swa_factor: float
) -> Callable[[int], float]:
    """A schedule that follows ``schedule_factor(step)`` until ``start_step``, then stays at ``swa_factor``."""

    def factor(step: int) -> float:
        return swa_factor if step >= start_step else schedule_factor(step)

    return factor


def recompute_bn(model: nn.Module, batches: Iterable) -> None:
    """Reset every BatchNorm's running statistics to their exact average over ``batches`` (one pass).

    The averaged weights never produced activations during training, so the statistics copied from any
    single iterate do not match them (Izmailov et al. 2018, Sec. 3.2).
    """
    update_bn(batches, model)


class SWAParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    swa_start: float = Field(0.7, ge=0, lt=1, description="fraction of training after which epochs are averaged")
    # Multiplier of the peak LR held constant from swa_start on; None keeps the recipe's schedule.
    # The paper's long CIFAR runs hold swa_lr / lr_init = 0.2 (VGG) to 0.5 (ResNets). Our default is lower,
    # nearer where a decaying schedule already is at 70 % of a run (cosine: 0.21); raise it for long budgets.
    swa_lr_factor: float | None = Field(0.05, gt=0, le=1, description="constant LR factor during averaging")


@register_algorithm
class SWA(Algorithm):
    name = "swa"
    description = "Average the weights of the last epochs (constant LR), recompute BN; wider optima"
    citation = "Izmailov et al. 2018, Averaging Weights Leads to Wider Optima and Better Generalization"
    events = frozenset({Event.FIT_START, Event.EPOCH_END, Event.FIT_END})
    order = 50
    Params = SWAParams

    def __init__(self, **params: Any):
        super().__init__(**params)
        self.averaged: AveragedModel | None = None
        self.start_step = 0

    def apply(self, event: Event, state: State) -> None:
        model = unwrap(state.model)  # average the eager module; a compiled wrapper shares its weights
        if event is Event.FIT_START:
            self.start_step = math.ceil(self.params.swa_start * state.total_steps)
            self.averaged = None
            if self.params.swa_lr_factor is not None:
                # The trainer sets the LR from schedule.factor(step) before every step: shadowing the
                # method on this instance is the one place that changes it for the rest of the run.
                state.schedule.factor = swa_lr_factor(state.schedule.factor, self.start_step,
                                                      self.params.swa_lr_factor)
        elif event is Event.EPOCH_END and state.step >= self.start_step:
            if self.averaged is None:
                self.averaged = AveragedModel(model)  # a deep copy with n_averaged = 0
            self.averaged.update_parameters(model)  # running mean of the snapshots
        elif event is Event.FIT_END and self.averaged is not None:
            # One pass over the training batches, inside the timed region: it is part of the method's cost.
            with state.autocast():
                recompute_bn(self.averaged.module, state.train_loader)
            state.eval_model = self.averaged.module
