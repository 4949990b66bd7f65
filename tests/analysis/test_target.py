"""recipesearch/analysis/target.py: the target accuracy of a search's headline, and the payback of its recipe, on
plain tables."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from recipesearch.analysis.target import (
    Payback,
    baseline_seeds,
    describe_seeds,
    payback,
    reference_budget,
    resolve_target,
    target_budgets,
)

POINTS = pd.DataFrame({"budget": [0.25, 0.5, 1.0, 2.0], "val_accuracy": [0.80, 0.85, 0.90, 0.89]})


def test_the_reference_budget_is_1_or_the_nearest_on_a_log_scale():
    assert reference_budget([0.25, 0.5, 1, 2]) == 1.0
    assert reference_budget([0.5, 2]) == 0.5  # a tie on the log scale: the cheaper
    assert reference_budget([0.25, 3]) == 3.0  # |log 3| < |log 0.25|
    assert math.isnan(reference_budget([]))


def test_each_kind_of_target():
    t = resolve_target("baseline", POINTS, "val_accuracy")
    assert t.accuracy == pytest.approx(0.90) and t.source == "the baseline at budget 1"
    best = resolve_target("baseline_best", POINTS, "val_accuracy")
    assert best.accuracy == pytest.approx(0.90) and best.source == "the baseline's best (budget 1)"
    assert resolve_target("baseline_best", POINTS.assign(val_accuracy=[0.8, 0.95, 0.9, 0.95]),
                          "val_accuracy").source == "the baseline's best (budget 0.5)"  # ties: the cheaper
    fixed = resolve_target(0.87, POINTS, "val_accuracy")
    assert fixed.accuracy == 0.87 and fixed.source == "a target of 0.8700"
    nearest = resolve_target("baseline", POINTS[POINTS["budget"] != 1.0], "val_accuracy")
    assert nearest.accuracy == pytest.approx(0.85) and nearest.source == "the baseline at budget 0.5 (nearest 1)"
    unknown = resolve_target("baseline", POINTS.iloc[:0], "val_accuracy")
    assert math.isnan(unknown.accuracy) and "not trained yet" in unknown.source


def test_payback_counts_every_run_and_rounds_the_break_even_up():
    runs = pd.DataFrame({"train_seconds": [4.0, 4.0, 2.0, float("nan"), 1.5]})  # a failed run without a time
    p = payback(runs, unit_seconds=4.0, saved_seconds=2.0)
    assert p.search_seconds == 11.5 and p.search_trainings == pytest.approx(2.875)
    assert p.break_even == 6  # 11.5 / 2 = 5.75 trainings: paid back after the 6th
    assert p.text() == ("the search cost 2.9 trainings of the baseline (0.00 h of training); its recipe saves 2.00 s "
                        "a training to the target: it pays for itself after 6 trainings")
    assert p.to_dict() == {"search_seconds": 11.5, "search_trainings": 2.875, "saved_seconds_per_training": 2.0,
                           "break_even_trainings": 6.0, "unit_seconds": 4.0, "by_stage": {}}


def test_payback_by_stage_in_the_order_the_stages_run():
    runs = pd.DataFrame({"train_seconds": [4.0, 4.0, 2.0, 1.0, 8.0, float("nan")],
                         "stage": ["baseline", "baseline", "search", "tune", "confirm", "search"]})
    p = payback(runs, unit_seconds=4.0, saved_seconds=float("nan"))
    assert p.by_stage == (("tune", 1.0), ("baseline", 8.0), ("search", 2.0), ("confirm", 8.0))
    assert p.stages_text() == ("by stage, in trainings of the baseline (hours of training): LR sweep 0.2 (0.00 h), "
                               "baseline 2.0 (0.00 h), proposals 0.5 (0.00 h), confirmation 2.0 (0.00 h)")
    assert p.to_dict()["by_stage"]["confirm"] == {"seconds": 8.0, "trainings": 2.0}


def test_payback_without_a_confirmed_recipe_or_a_saving():
    none = Payback(100.0, 4.0, float("nan"))
    assert math.isnan(none.break_even) and none.text().endswith("no confirmed recipe to pay it back")
    assert none.to_dict()["break_even_trainings"] is None
    slower = Payback(100.0, 4.0, -1.0)
    assert math.isinf(slower.break_even) and slower.text().endswith("so it never pays for itself")
    assert Payback(0.0, 4.0, 1.0).text() == "" and Payback(10.0, float("nan"), 1.0).text() == ""


def test_the_target_is_read_at_the_reference_budget_and_the_one_below():
    assert target_budgets([0.25, 0.5, 1]) == (0.5, 1.0)
    assert target_budgets([1, 2, 0.25, 0.5]) == (0.5, 1.0)
    assert target_budgets([2, 3, 4]) == (2.0,)  # nothing below the budget nearest 1
    assert target_budgets([]) == ()
    assert [baseline_seeds(b, [0.25, 0.5, 1, 2], 3, 1) for b in (0.25, 0.5, 1, 2)] == [1, 3, 3, 1]
    assert [baseline_seeds(b, [0.25, 0.5, 1], 3, None) for b in (0.25, 0.5, 1)] == [3, 3, 3]
    assert describe_seeds([0.25, 0.5, 1], 3, None) == "3 seed(s) at budgets 0.25, 0.5, 1"
    assert describe_seeds([0.25, 0.5, 1, 2], 3, 1) == "3 seed(s) at budgets 0.5, 1 and 1 at 0.25, 2"
