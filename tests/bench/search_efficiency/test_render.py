"""§4's render (bench/search_efficiency/render.py): the replay goal read per arm off its ratio and bootstrap
interval, and the table-choice paragraph for the full table only."""
from __future__ import annotations

import math

from bench.search_efficiency.config import GOAL_RATIO, GRID, GRID_QUICK
from bench.search_efficiency.render import (
    _interval_meets_goal,
    _meeting_arms,
    _ratio_cell,
    _replay_goal_text,
    _table_choice_text,
)


def _row(ratio: float, interval: list[float], reached: int) -> dict:
    return {"relative_to_random": ratio, "relative_interval_95": interval, "reached": reached, "seeds": 20,
            "goal_met": ratio <= GOAL_RATIO}


def test_a_meeting_arm_meets_across_its_interval_only_when_the_intervals_top_is_within_the_goal():
    assert _row(0.28, [0.21, 0.41], 18)["goal_met"] and not _interval_meets_goal(_row(0.28, [0.21, 0.41], 18))
    assert _interval_meets_goal(_row(0.25, [0.2, 0.29], 20))
    assert not _interval_meets_goal(_row(0.29, [0.2, math.inf], 9))  # some resamples never reach it


def test_the_ratio_cells_give_the_interval_and_never_for_an_unbounded_top():
    assert _ratio_cell(_row(0.28, [0.21, 0.41], 18)) == "0.28x [0.21–0.41]"
    assert _ratio_cell(_row(0.29, [0.2, math.inf], 9)) == "0.29x [0.20–never]"
    assert _ratio_cell(_row(math.inf, [0.7, math.inf], 3)) == "not reached [0.70–never]"


def test_the_replay_goal_is_met_by_the_arms_whose_median_meets_it():
    rows = {"random": _row(1.0, [0.7, math.inf], 10), "tpe": _row(0.56, [0.5, math.inf], 10)}
    assert _meeting_arms(rows) == {}  # not met
    assert list(_meeting_arms({**rows, "gp": _row(0.25, [0.2, 0.29], 20)})) == ["gp"]
    assert _replay_goal_text(rows, ("tpe", 0.56)).startswith("**Goal**")


def test_the_table_choice_is_explained_for_the_full_table_only():
    assert _table_choice_text({"grid": GRID, "n_trials": 26, "table_rows": 768})
    assert _table_choice_text({"grid": GRID_QUICK, "n_trials": 8, "table_rows": 24}) == []
