"""Lookahead: every k steps the slow weights move a fraction alpha toward the fast ones, which restart there.

Zhang, Lucas, Hinton & Ba 2019, "Lookahead Optimizer: k steps forward, 1 step back" (NeurIPS); works
around any inner optimizer (SGD, AdamW, Muon), whose state (momentum) is kept across syncs, the paper's
default. Evaluation uses the slow weights: a last sync at FIT_END folds in the fast steps since the
previous one, and the model then holds the slow weights.

The records: hlb-CIFAR10 (tysam-code, ``main.py``) kept a plain EMA of the weights over its last 3 epochs
(``NetworkEMA``: decay 0.987 per step, applied every 2 steps, evaluated, never copied back into the
trained network); airbench94.py (KellerJordan/cifar10-airbench) turned it into Lookahead
(``LookaheadState``: ``ema.lerp_(net, 1 - decay)`` then ``net.copy_(ema)`` for every float tensor of the
state dict, BN statistics included). Its defaults differ from the paper's, which are ours:
- every 5 steps (``every_n_steps``: the same k) from epoch 3 of 9.9 (``start`` ~0.3; ours 0: from the start);
- alpha = 1 - 0.95**5 * progress**3, rising strength of the average: ~1 (no pull) early, 0.23 at the end;
  ours is the paper's constant 0.5 (Zhang et al. use alpha 0.5, k 5 on CIFAR), or airbench94's with
  ``alpha_schedule: cubic`` (1 - (1 - alpha) * progress**3, progress = steps taken / all steps) and
  ``alpha: 0.2262`` (= 1 - 0.95**5);
- BN buffers averaged like weights (``sync_buffers``: ours too; the paper does not say);
- at each epoch end airbench copies the slow weights back without a pull, discarding the < k fast steps
  since the last sync; ours pulls once more at FIT_END instead, so no training step is wasted.
"""
from __future__ import annotations

import math
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn

from recipesearch.algorithms._surgery import unwrap
from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


@torch.no_grad()
def lookahead_sync(slow: list[Tensor], fast: list[Tensor], alpha: float) -> None:
    """slow <- slow + alpha * (fast - slow), then fast <- slow (both in place)."""
    torch._foreach_lerp_(slow, fast, alpha)
    for f, s in zip(fast, slow):
        f.copy_(s)


def synced_tensors(model: nn.Module, buffers: bool) -> list[Tensor]:
    """The tensors Lookahead keeps slow copies of: every parameter, and floating-point buffers if asked."""
    tensors = list(model.parameters())
    if buffers:
        tensors += [b for b in model.buffers() if b.is_floating_point()]  # not num_batches_tracked
    return tensors


class LookaheadParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    k: int = Field(5, ge=1, description="fast steps between syncs (paper and airbench94.py: 5)")
    alpha: float = Field(0.5, gt=0, le=1, description="slow step toward the fast weights (paper: 0.5; 1 = off)")
    start: float = Field(0.0, ge=0, lt=1, description="fraction of training before the first sync (airbench ~0.3)")
    alpha_schedule: Literal["constant", "cubic"] = Field(
        "constant", description="cubic: the pull is 1 - (1 - alpha) * progress**3, alpha at the end (airbench94)")
    sync_buffers: bool = Field(True, description="average BN statistics too (airbench94.py's LookaheadState)")


@register_algorithm
class Lookahead(Algorithm):
    name = "lookahead"
    description = "Every k steps pull slow weights toward the fast ones by alpha and restart there; evaluate slow"
    citation = "Zhang et al. 2019, Lookahead Optimizer: k steps forward, 1 step back; airbench94.py"
    events = frozenset({Event.FIT_START, Event.AFTER_STEP, Event.FIT_END})
    order = 40  # before EMA/SWA (50): they average the weights the sync leaves
    Params = LookaheadParams

    def __init__(self, **params: Any):
        super().__init__(**params)
        self.slow: list[Tensor] | None = None
        self.start_step = 0
        self.last_sync = 0

    def match(self, event: Event, state: State) -> bool:
        if event is Event.AFTER_STEP:
            since = state.step - self.start_step
            return since >= 0 and since % self.params.k == 0
        return event in self.events

    def apply(self, event: Event, state: State) -> None:
        # The eager module: a compiled wrapper shares its weights.
        fast = synced_tensors(unwrap(state.model), self.params.sync_buffers)
        if event is Event.FIT_START:
            self.start_step = math.ceil(self.params.start * state.total_steps)
            self.slow = None
            self.last_sync = self.start_step
            if self.start_step == 0:
                self.slow = [t.detach().clone() for t in fast]
        elif self.slow is None:  # AFTER_STEP at start_step > 0: the slow weights start where training is
            self.slow = [t.detach().clone() for t in fast]
        elif event is Event.AFTER_STEP or state.step != self.last_sync:
            lookahead_sync(self.slow, fast, self.alpha_at(state.step / max(1, state.total_steps)))
            self.last_sync = state.step

    def alpha_at(self, progress: float) -> float:
        """The pull toward the fast weights of a sync at ``progress`` (0 -> 1) of training."""
        if self.params.alpha_schedule == "constant":
            return self.params.alpha
        return 1 - (1 - self.params.alpha) * min(1.0, progress) ** 3
