"""Step-wise learning-rate schedules declared in epochs and dilated by the budget.

``LRSchedule.factor(step)`` returns the multiplier of the peak LR at an optimizer step. Every epoch value
of the spec (warmup, milestones) is multiplied by the budget, exactly like Composer's
``scale_schedule_ratio``, so a 0.5x run sees the whole schedule in half the steps.
"""
from __future__ import annotations

import bisect
import math

from recipesearch.recipe import Recipe, ScheduleSpec


class LRSchedule:
    """Maps a global step to an LR factor; the trainer calls it once per step (``set_lr``)."""

    def __init__(self, spec: ScheduleSpec, steps_per_epoch: int, total_steps: int, budget: float = 1.0,
                 decay: bool = True):
        self.spec = spec
        self.decay = decay  # False for a schedule-free optimizer: its averaging anneals; the warmup alone applies
        self.total_steps = max(1, total_steps)
        per_epoch = steps_per_epoch * budget  # dilation: an epoch of the spec lasts `budget` epochs
        self.warmup_steps = min(self.total_steps, round(spec.warmup_epochs * per_epoch))
        self.milestones = [round(m * per_epoch) for m in spec.milestones]

    @classmethod
    def of(cls, recipe: Recipe, steps_per_epoch: int, total_steps: int) -> LRSchedule:
        """``recipe``'s schedule, dilated by its budget; its decay dropped under a schedule-free optimizer."""
        from recipesearch.train.schedule_free import NAMES

        decay = recipe.optimizer.name not in NAMES
        return cls(recipe.schedule, steps_per_epoch, total_steps, recipe.budget, decay=decay)

    def factor(self, step: int) -> float:
        s = self.spec
        if not self.decay:
            return (step + 1) / self.warmup_steps if step < self.warmup_steps else 1.0
        if s.name == "onecycle":
            return self._onecycle(step)
        if step < self.warmup_steps:  # 1) linear warmup from ~0 to the peak
            return (step + 1) / self.warmup_steps
        if s.name == "constant":
            return 1.0
        if s.name == "multistep":  # 2a) step decay at the (dilated) milestones
            return s.gamma ** bisect.bisect_right(self.milestones, step)
        # 2b) decay from the peak to final_lr_factor over the steps left after warmup
        span = max(1, self.total_steps - self.warmup_steps)
        t = min(1.0, (step - self.warmup_steps) / span)
        shape = 0.5 * (1 + math.cos(math.pi * t)) if s.name == "cosine" else 1 - t  # else linear
        return s.final_lr_factor + (1 - s.final_lr_factor) * shape

    def _onecycle(self, step: int) -> float:
        # Linear rise from final_lr_factor to 1 over pct_start, then linear fall (fast-CIFAR style).
        peak = max(1, round(self.spec.pct_start * self.total_steps))
        low = self.spec.final_lr_factor
        if step < peak:
            return low + (1 - low) * (step + 1) / peak
        t = min(1.0, (step - peak) / max(1, self.total_steps - peak))
        return 1 - (1 - low) * t
