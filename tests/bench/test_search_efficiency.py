"""§4's real-search arms (bench/search_efficiency.py): each swaps the sampler and the scheduler only."""
from __future__ import annotations

import pytest

from bench.search_efficiency.config import REAL_ARMS
from bench.search_efficiency.real import real_space


def test_issue_14s_seven_arms_and_promotion_with_the_model_based_samplers():
    assert set(REAL_ARMS) == {"random", "tpe", "gp", "nsga2", "tpe+moasha", "random+moasha", "promote",
                              "tpe+promote", "gp+promote"}


@pytest.mark.parametrize("arm", ["tpe+moasha", "promote", "gp", "gp+promote"])
def test_a_real_arm_swaps_only_the_sampler_and_the_scheduler(arm):
    space = real_space(arm, 1, quick=True)
    sampler, scheduler = REAL_ARMS[arm]
    assert space.sampler.name == sampler and space.sampler.seed == 1 and space.scheduler.name == scheduler
    assert space.budgets == [0.25, 0.5] and space.trials == 10 and not space.confirm.enabled
    fifo = real_space("random", 1, quick=True)
    assert space.base.to_dict() == fifo.base.to_dict() and space.budgets == fifo.budgets


def _row(ratio: float, interval: list[float], reached: int) -> dict:
    from bench.search_efficiency.config import GOAL_RATIO

    return {"relative_to_random": ratio, "relative_interval_95": interval, "reached": reached, "seeds": 20,
            "goal_met": ratio <= GOAL_RATIO}


def test_the_replay_goal_line_says_when_a_meeting_arms_interval_reaches_above_the_goal():
    import math

    from bench.search_efficiency.render import _replay_goal_text

    rows = {"random": _row(1.0, [0.7, math.inf], 10), "tpe+promote": _row(0.28, [0.21, 0.41], 18),
            "gp+promote": _row(0.25, [0.2, 0.29], 20)}
    text = _replay_goal_text(rows, ("gp+promote", 0.25))
    assert "**met** by `tpe+promote` (0.28x [0.21–0.41] (the interval reaches above the goal), 18/20 seeds" in text
    assert "`gp+promote` (0.25x [0.20–0.29], 20/20 seeds reach the target)" in text
    never = _replay_goal_text({"random": rows["random"], "x": _row(0.29, [0.2, math.inf], 9)}, ("x", 0.29))
    assert "0.29x [0.20–never] (the interval reaches above the goal), 9/20 seeds" in never
    missed = _replay_goal_text({"random": rows["random"], "tpe": _row(0.56, [0.5, math.inf], 10)}, ("tpe", 0.56))
    assert "**not met**; the best arm is `tpe` at 0.56x." in missed


def test_the_table_choice_is_explained_for_the_full_table_only():
    from bench.search_efficiency.config import GRID, GRID_QUICK
    from bench.search_efficiency.render import _table_choice_text

    full = _table_choice_text({"grid": GRID, "n_trials": 26, "table_rows": 768})
    assert "sees at most 3% of its recipes" in full[1] and "768 recipes" in full[1]
    assert _table_choice_text({"grid": GRID_QUICK, "n_trials": 8, "table_rows": 24}) == []
