from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from recipesearch.analysis.seeds import SeedStats, curve_by_budget, seed_summary

# Two-sided 95 % Student-t quantiles from a printed table: t_{0.975, dof}.
T_975 = {1: 12.706204736, 2: 4.302652730, 3: 3.182446305}


def test_seed_summary_matches_hand_t_interval():
    # mean 2.5; sample variance ((1.5^2 + 0.5^2) * 2) / 3 = 5/3; half-width t_{.975,3} * s / sqrt(4).
    s = seed_summary([1.0, 2.0, 3.0, 4.0])
    half = T_975[3] * math.sqrt(5 / 3) / 2
    assert s.n == 4 and s.mean == pytest.approx(2.5)
    assert s.std == pytest.approx(math.sqrt(5 / 3))
    assert s.ci_low == pytest.approx(2.5 - half, rel=1e-8)
    assert s.ci_high == pytest.approx(2.5 + half, rel=1e-8)


def test_seed_summary_confidence_level_changes_width():
    wide, narrow = seed_summary([1.0, 2.0, 4.0]), seed_summary([1.0, 2.0, 4.0], confidence=0.5)
    assert narrow.ci_high - narrow.ci_low < wide.ci_high - wide.ci_low
    with pytest.raises(ValueError):
        seed_summary([1.0, 2.0], confidence=1.0)


def test_seed_summary_single_seed_has_no_interval_and_nan_is_dropped():
    s = seed_summary([0.9, np.nan])
    assert s.n == 1 and s.mean == pytest.approx(0.9)
    assert math.isnan(s.std) and math.isnan(s.ci_low) and math.isnan(s.ci_high)
    empty = seed_summary([np.nan])
    assert empty.n == 0 and math.isnan(empty.mean)


def _runs() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "recipe": ["a", "a", "a", "a", "a", "b", "b"],
            "budget": [0.5, 0.5, 0.5, 1.0, 1.0, 1.0, 1.0],
            "seed": [0, 1, 2, 0, 1, 0, 1],
            "val_accuracy": [0.80, 0.82, 0.84, 0.90, np.nan, 0.70, 0.74],
            "train_seconds": [10.0, 11.0, 12.0, 20.0, 21.0, 30.0, 34.0],
        }
    )


def test_curve_by_budget_one_row_per_group_and_budget():
    curve = curve_by_budget(_runs(), ["recipe"], acc_col="val_accuracy")
    assert list(zip(curve["recipe"], curve["budget"])) == [("a", 0.5), ("a", 1.0), ("b", 1.0)]
    # The NaN-accuracy run is not a seed: recipe a at budget 1 has one seed and no interval.
    assert curve["n_seeds"].tolist() == [3, 1, 2]
    a_half = curve.iloc[0]
    assert a_half["accuracy_mean"] == pytest.approx(0.82)
    assert a_half["accuracy_ci_high"] - 0.82 == pytest.approx(T_975[2] * 0.02 / math.sqrt(3))
    assert a_half["time_mean"] == pytest.approx(11.0)
    assert a_half["time_ci_low"] == pytest.approx(11.0 - T_975[2] * 1.0 / math.sqrt(3))
    single = curve.iloc[1]
    assert single["accuracy_mean"] == pytest.approx(0.90) and single["time_mean"] == pytest.approx(20.0)
    assert math.isnan(single["accuracy_ci_low"]) and math.isnan(single["time_std"])
    b = curve.iloc[2]
    expected = seed_summary([30.0, 34.0])
    assert (b["time_mean"], b["time_ci_low"], b["time_ci_high"]) == pytest.approx(
        (expected.mean, expected.ci_low, expected.ci_high)
    )


def test_curve_by_budget_agrees_with_seed_summary_and_no_groups():
    runs = _runs()[lambda d: d["recipe"] == "a"]
    curve = curve_by_budget(runs, [], acc_col="val_accuracy")
    assert curve.columns[:2].tolist() == ["budget", "n_seeds"]
    row = curve.iloc[0]
    s = seed_summary(runs["val_accuracy"][runs["budget"] == 0.5])
    assert SeedStats(int(row["n_seeds"]), row["accuracy_mean"], row["accuracy_std"],
                     row["accuracy_ci_low"], row["accuracy_ci_high"]) == pytest.approx(s)


def test_curve_by_budget_reads_only_the_named_accuracy_column():
    runs = _runs().assign(accuracy=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    before = curve_by_budget(runs, ["recipe"], acc_col="val_accuracy")
    garbled = runs.assign(accuracy=np.random.default_rng(0).permutation(runs["accuracy"].to_numpy()) * 7)
    pd.testing.assert_frame_equal(before, curve_by_budget(garbled, ["recipe"], acc_col="val_accuracy"))
    pd.testing.assert_frame_equal(
        before, curve_by_budget(runs.drop(columns=["accuracy", "seed"]), ["recipe"], acc_col="val_accuracy")
    )
    assert not curve_by_budget(runs, ["recipe"])["accuracy_mean"].equals(before["accuracy_mean"])
