from __future__ import annotations

import io
import pathlib

import numpy as np
import pandas as pd
import pytest

from recipesearch.analysis import (
    algorithm_effects,
    budget_bands,
    membership,
    pairwise_interactions,
    regime_recipes,
    trials_front_mask,
)


def _trials() -> pd.DataFrame:
    rows = [  # algorithms, budget, accuracy, throughput, state
        ("", 1, 0.50, 100, "COMPLETE"),
        ("", 1, 0.52, 100, "COMPLETE"),
        ("a", 1, 0.60, 80, "COMPLETE"),
        ("", 2, 0.70, 100, "COMPLETE"),
        ("a", 2, 0.74, 80, "COMPLETE"),
        ("a", 2, 0.76, 80, "COMPLETE"),
        ("b", 2, 0.78, 50, "COMPLETE"),
        ("a", 2, np.nan, np.nan, "FAIL"),
    ]
    df = pd.DataFrame(rows, columns=["algorithms", "budget", "accuracy", "throughput", "state"])
    df["number"] = range(len(df))
    df["train_seconds"] = [10, 10, 12, 20, 24, 24, 30, 5]
    return df


def test_algorithm_effects_by_hand():
    df = _trials()
    front = [False, False, True, False, False, False, True, False]
    eff = algorithm_effects(df, front).set_index("algorithm")
    a, b = eff.loc["a"], eff.loc["b"]
    assert (a.n_trials, a.n_with, a.n_without, a.n_front_with) == (4, 3, 4, 1)
    assert a.share_completed == pytest.approx(3 / 7) and a.share_front == pytest.approx(0.5)
    assert a.mean_acc_with == pytest.approx(0.70) and a.mean_acc_without == pytest.approx(0.625)
    assert a.acc_diff == pytest.approx(0.075)
    # budget 1: 0.60 - 0.51 over 3 trials; budget 2: 0.75 - 0.74 over 4 trials.
    assert a.acc_diff_budget_matched == pytest.approx((3 * 0.09 + 4 * 0.01) / 7)
    assert a.n_budgets_matched == 2
    assert a.throughput_ratio == pytest.approx(80 / 87.5)
    assert (b.n_with, b.n_without, b.n_budgets_matched) == (1, 6, 1)
    assert b.acc_diff_budget_matched == pytest.approx(0.78 - (0.70 + 0.74 + 0.76) / 3)
    assert b.throughput_ratio == pytest.approx(50 / 90)  # without b: 100, 100, 80, 100, 80, 80


def test_algorithm_effects_front_defaults():
    df = _trials()
    df["on_front"] = [False, False, True, False, False, False, True, False]
    assert algorithm_effects(df).set_index("algorithm").loc["a", "share_front"] == pytest.approx(0.5)
    df = df.drop(columns="on_front")
    # Accuracy-vs-time front of completed trials: 0.52@10, 0.60@12, 0.70@20, 0.76@24, 0.78@30.
    assert trials_front_mask(df).tolist() == [False, True, True, True, False, True, True, False]
    eff = algorithm_effects(df).set_index("algorithm")
    assert eff.loc["a", "n_front_with"] == 2 and eff.loc["b", "share_front"] == pytest.approx(1 / 5)


def test_algorithm_effects_empty_and_csv_roundtrip():
    assert algorithm_effects(_trials().iloc[:0], []).empty
    csv = io.StringIO()
    _trials().to_csv(csv, index=False)
    csv.seek(0)
    df = pd.read_csv(csv)  # '' comes back as NaN
    assert list(membership(df).columns) == ["a", "b"]
    assert algorithm_effects(df, np.zeros(len(df), bool)).set_index("algorithm").loc["a", "n_with"] == 3


def _interaction_trials() -> pd.DataFrame:
    rows = [
        # budget 1: -0.05
        ("", 1, 0.50), ("a", 1, 0.60), ("b", 1, 0.65), ("a+b", 1, 0.70),
        # budget 2: +0.05, two 'neither' trials (mean 0.70)
        ("", 2, 0.69), ("", 2, 0.71), ("a", 2, 0.80), ("b", 2, 0.80), ("a+b", 2, 0.95),
        # budget 3 lacks cells: skipped
        ("", 3, 0.9), ("a", 3, 0.9),
    ]  # fmt: skip
    df = pd.DataFrame(rows, columns=["algorithms", "budget", "accuracy"])
    df["state"] = "COMPLETE"
    return df


def test_pairwise_interaction_by_hand():
    got = pairwise_interactions(_interaction_trials(), min_count=1)
    assert len(got) == 1
    r = got.iloc[0]
    assert (r.algo_a, r.algo_b) == ("a", "b")
    assert r.interaction == pytest.approx((4 * -0.05 + 5 * 0.05) / 9)
    assert (r.n_both, r.n_a_only, r.n_b_only, r.n_neither, r.n_budgets) == (2, 2, 2, 3, 2)


def test_pairwise_interaction_not_enough_trials():
    got = pairwise_interactions(_interaction_trials(), min_count=2)
    assert got.empty and "interaction" in got.columns
    assert pairwise_interactions(_interaction_trials().iloc[:0]).empty


def test_budget_bands_mapping():
    assert budget_bands([5]) == {5.0: "medium"}
    assert budget_bands([2, 1, 2]) == {1.0: "short", 2.0: "long"}
    assert list(budget_bands([1, 2, 3]).values()) == ["short", "medium", "long"]
    assert list(budget_bands([1, 2, 3, 4]).values()) == ["short", "short", "medium", "long"]
    assert list(budget_bands([1, 2, 3, 4, 5]).values()) == ["short", "short", "medium", "medium", "long"]
    assert list(budget_bands(range(1, 7)).values()) == ["short"] * 2 + ["medium"] * 2 + ["long"] * 2


def _front() -> pd.DataFrame:
    return pd.DataFrame({
        "number": [0, 1, 2, 3, 4, 5, 6],
        "budget": [1, 2, 2, 3, 4, 6, 5],
        "accuracy": [0.5, 0.6, 0.6, 0.7, 0.72, 0.8, 0.79],
        "train_seconds": [10, 20, 15, 30, 40, 60, 50],
    })  # fmt: skip


def test_regime_recipes_pick_best_per_band():
    got = regime_recipes(_front())
    assert got["band"].tolist() == ["short", "medium", "long"]
    assert got["label"].tolist() == ["Mild", "Medium", "Hot"]
    assert got["number"].tolist() == [2, 4, 5]  # number 2 wins the 0.6 tie on time


def test_regime_recipes_with_all_budgets_and_few_budgets():
    front = _front()
    late = front[front["budget"].isin([4, 5])]
    got = regime_recipes(late, all_budgets=range(1, 7))
    assert got["band"].tolist() == ["medium", "long"] and got["number"].tolist() == [4, 6]
    got = regime_recipes(late)  # only two budgets on the front: short and long
    assert got["label"].tolist() == ["Mild", "Hot"] and got["number"].tolist() == [4, 6]
    assert regime_recipes(front.iloc[:0]).empty


def test_analysis_package_imports_no_search_framework():
    pkg = pathlib.Path(__file__).resolve().parents[2] / "recipesearch" / "analysis"
    for f in pkg.glob("*.py"):
        text = f.read_text()
        for lib in ("ray", "optuna", "torch"):
            assert f"import {lib}" not in text and f"from {lib}" not in text, f"{f.name} imports {lib}"


def test_front_mask_series_aligns_by_index():
    df = _trials().set_index(np.arange(100, 108))
    front = pd.Series([True, True], index=[106, 102])  # b's trial and a's first trial; rest False
    eff = algorithm_effects(df, front).set_index("algorithm")
    assert eff.loc["a", "share_front"] == pytest.approx(0.5) and eff.loc["b", "n_front_with"] == 1
