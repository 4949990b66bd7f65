"""LR schedules: declared in epochs, executed per step, dilated by the budget."""
from __future__ import annotations

import math

import pytest

from recipesearch.recipe import ScheduleSpec
from recipesearch.train.schedule import LRSchedule


def factors(spec, steps_per_epoch, epochs, budget=1.0):
    total = round(epochs * budget * steps_per_epoch)
    sched = LRSchedule(spec, steps_per_epoch, total, budget)
    return [sched.factor(s) for s in range(total)]


def test_warmup_then_cosine_to_zero():
    f = factors(ScheduleSpec(name="cosine", warmup_epochs=1), steps_per_epoch=10, epochs=5)
    assert f[0] == pytest.approx(0.1) and f[9] == pytest.approx(1.0)  # linear warmup over 10 steps
    assert f[10] == pytest.approx(1.0)
    mid = 10 + 20  # halfway through the 40 decay steps
    assert f[mid] == pytest.approx(0.5 * (1 + math.cos(math.pi * 0.5)))
    assert f[-1] < 0.01 and all(a >= b for a, b in zip(f[10:], f[11:]))


def test_multistep_milestones_in_epochs():
    f = factors(ScheduleSpec(name="multistep", milestones=[2, 4], gamma=0.1), steps_per_epoch=10, epochs=6)
    assert f[19] == 1.0 and f[20] == pytest.approx(0.1) and f[40] == pytest.approx(0.01)


def test_budget_dilates_every_milestone():
    spec = ScheduleSpec(name="multistep", warmup_epochs=1, milestones=[2, 4])
    full = factors(spec, steps_per_epoch=10, epochs=6, budget=1.0)
    half = factors(spec, steps_per_epoch=10, epochs=6, budget=0.5)
    assert len(half) == len(full) // 2
    # The half-budget run sees the same schedule at every other step.
    assert half == pytest.approx(full[1::2], abs=0.06)
    assert half[10] == pytest.approx(0.1) and half[9] == 1.0


def test_linear_and_final_factor():
    f = factors(ScheduleSpec(name="linear", final_lr_factor=0.1), steps_per_epoch=10, epochs=1)
    assert f[0] == pytest.approx(1.0) and f[-1] == pytest.approx(0.1 + 0.9 / 10)


def test_onecycle_rises_then_falls():
    f = factors(ScheduleSpec(name="onecycle", pct_start=0.25), steps_per_epoch=10, epochs=4)
    peak = f.index(max(f))
    assert peak == 9 and f[0] < 0.2 and f[-1] < 0.05
    assert all(a <= b for a, b in zip(f[:peak], f[1:peak + 1]))
