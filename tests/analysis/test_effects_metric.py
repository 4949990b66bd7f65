"""Effects, interactions and regime picks follow the selection metric (val_accuracy), never test accuracy.

Every table below has a validation and a test column that disagree (test says the opposite of val), so a
number taken on the wrong column shows up as a wrong sign or a wrong pick.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recipesearch.analysis import (
    algorithm_effects,
    completed_mask,
    pairwise_interactions,
    regime_recipes,
    trials_front_mask,
)

VAL = "val_accuracy"


def _trials() -> pd.DataFrame:
    rows = [  # algorithms, budget, val_accuracy, test accuracy, train_seconds
        ("", 1, 0.50, 0.60, 10), ("a", 1, 0.60, 0.50, 12),  # a helps on val (+0.10), hurts on test
        ("", 2, 0.70, 0.80, 20), ("a", 2, 0.80, 0.70, 24),
        ("a", 2, np.nan, 0.99, 5),  # no val accuracy: not completed on val, though its test looks great
    ]  # fmt: skip
    df = pd.DataFrame(rows, columns=["algorithms", "budget", VAL, "accuracy", "train_seconds"])
    return df.assign(state="COMPLETE", number=range(len(df)), throughput=100.0)


def test_completed_and_front_are_on_the_metric():
    df = _trials()
    assert completed_mask(df, VAL).tolist() == [True, True, True, True, False]
    assert completed_mask(df).tolist() == [True] * 5  # the test column: backwards-compatible default
    # on val: 0.50@10, 0.60@12, 0.70@20, 0.80@24 each beat the faster ones; on test row 4 dominates all
    assert trials_front_mask(df, metric=VAL).tolist() == [True, True, True, True, False]
    assert trials_front_mask(df).tolist() == [False, False, False, False, True]


def test_algorithm_effect_follows_val():
    eff = algorithm_effects(_trials(), metric=VAL).set_index("algorithm").loc["a"]
    assert eff.acc_diff_budget_matched == pytest.approx(0.10) and eff.n_budgets_matched == 2
    assert (eff.mean_acc_with, eff.mean_acc_without) == (pytest.approx(0.70), pytest.approx(0.60))
    assert (eff.n_with, eff.n_trials) == (2, 3)  # the trial without val accuracy is tried, not completed
    on_test = algorithm_effects(_trials()).set_index("algorithm").loc["a"]
    assert on_test.acc_diff_budget_matched < 0  # what the test column would have said


def _interaction_trials() -> pd.DataFrame:
    rows = [  # algorithms, val, test: on val a and b overlap (-0.10), on test they help each other (+0.10)
        ("", 0.50, 0.50), ("a", 0.60, 0.55), ("b", 0.60, 0.55), ("a+b", 0.60, 0.70),
    ]  # fmt: skip
    df = pd.DataFrame(rows, columns=["algorithms", VAL, "accuracy"])
    return df.assign(state="COMPLETE", budget=1.0)


def test_pairwise_interaction_follows_val():
    got = pairwise_interactions(_interaction_trials(), min_count=1, metric=VAL)
    assert got.iloc[0].interaction == pytest.approx(-0.10)
    assert pairwise_interactions(_interaction_trials(), min_count=1).iloc[0].interaction == pytest.approx(0.10)


def test_regime_recipe_is_the_best_on_val_and_reports_val():
    front = pd.DataFrame({
        "number": [0, 1, 2, 3], "budget": [1, 1, 2, 2],
        VAL: [0.70, 0.60, 0.80, 0.90], "accuracy": [0.60, 0.70, 0.95, 0.85],
        "train_seconds": [10, 11, 20, 21],
    })  # fmt: skip
    got = regime_recipes(front, metric=VAL)
    assert got["number"].tolist() == [0, 3]  # test would have picked 1 and 2
    assert VAL in got.columns and "accuracy" not in got.columns  # the caller joins the test figure
    assert regime_recipes(front)["number"].tolist() == [1, 2]
    assert regime_recipes(front.drop(columns=VAL), metric=VAL).empty
