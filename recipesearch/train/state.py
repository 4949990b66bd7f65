"""Everything an algorithm may read or change while the loop runs."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

if TYPE_CHECKING:
    from recipesearch.data import BatchLoader, DataBundle
    from recipesearch.recipe import Recipe
    from recipesearch.train.schedule import LRSchedule

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass
class State:
    recipe: Recipe
    model: nn.Module
    data: DataBundle
    device: torch.device
    num_classes: int
    loss_fn: LossFn
    autocast_dtype: torch.dtype | None = None  # None: fp32
    grad_scaler: torch.amp.GradScaler | None = None  # fp16 only: algorithms unscale before touching grads
    channels_last: bool = False  # set by channels_last: the loader and evaluation follow the model
    optimizer: torch.optim.Optimizer | None = None
    schedule: LRSchedule | None = None
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
