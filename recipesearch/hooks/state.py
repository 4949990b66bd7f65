"""Everything an algorithm may read or change while the loop runs.

Part of the hook contract (``recipesearch.hooks``), which sits below both the algorithms and the trainers that
run them: it names the types it holds only for annotations, and the LR schedule by what algorithms use of it
(``Schedule``), so that it imports nothing of ``recipesearch.train``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import torch
from torch import nn

if TYPE_CHECKING:
    from recipesearch.data import BatchLoader, DataBundle

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class Schedule(Protocol):
    """What algorithms use of the LR schedule (``recipesearch.train.schedule.LRSchedule``): the factor of the
    peak LR at an optimizer step, which a method may replace (SWA switches to its own constant LR)."""

    factor: Callable[[int], float]


@dataclass
class State:
    # the run's ``recipesearch.recipe.Recipe``; not imported here: the recipe module validates algorithm names
    # against the registry, which imports this contract (a cycle)
    recipe: Any
    model: nn.Module
    data: DataBundle
    device: torch.device
    num_classes: int
    loss_fn: LossFn
    autocast_dtype: torch.dtype | None = None  # None: fp32
    grad_scaler: torch.amp.GradScaler | None = None  # fp16 only: algorithms unscale before touching grads
    channels_last: bool = False  # set by channels_last: the loader and evaluation follow the model
    optimizer: torch.optim.Optimizer | None = None
    schedule: Schedule | None = None
    train_loader: BatchLoader | None = None
    # The batch: targets are class indices [B] or a class distribution [B, K] (MixUp, label smoothing).
    x: torch.Tensor | None = None
    y: torch.Tensor | None = None
    outputs: torch.Tensor | None = None
    loss: torch.Tensor | None = None
    epoch: int = 0
    step: int = 0  # optimizer steps taken so far
    steps_per_epoch: int = 0
    total_steps: int = 0
    # Model evaluated at the end (EMA/SWA put their averaged copy here); None means ``model``.
    eval_model: nn.Module | None = None
    # Re-runs forward, loss and backward on the current batch without firing events (SAM's second pass).
    forward_backward: Callable[[], torch.Tensor] | None = None
    # Set by an algorithm to skip the optimizer step of this batch (e.g. every sample was dropped).
    skip_step: bool = False
    samples_seen: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def progress(self) -> float:
        """Fraction of training done, 0 → 1: algorithms schedule themselves on it, so budgets dilate them."""
        return self.step / max(1, self.total_steps)

    def autocast(self):
        if self.autocast_dtype is None:
            return torch.autocast(self.device.type, enabled=False)
        return torch.autocast(self.device.type, dtype=self.autocast_dtype)
