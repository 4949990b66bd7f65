"""recipesearch/analysis/frontier.py on hand-made trials: one definition of completed, front, speedup, headline."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from recipesearch.analysis import Objectives, frontier

TEST = Objectives(("accuracy", "train_seconds"), ("maximize", "minimize"), "test")
VAL = Objectives(("accuracy", "train_seconds"), ("maximize", "minimize"), "val")
WITH_COST = Objectives(("accuracy", "train_seconds", "cost"), ("maximize", "minimize", "minimize"), "test")
COLUMNS = ["number", "state", "is_baseline", "budget", "algorithms", "accuracy", "val_accuracy", "train_seconds",
           "cost"]


def trials(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLUMNS)


# The baseline curve is (1 s, 0.80) -> (4 s, 0.90): log time is linear in accuracy between them.
# number, state, is_baseline, budget, algorithms, accuracy, val_accuracy, train_seconds, cost
ROWS = [
    (0, "COMPLETE", True, 0.25, "", 0.80, 0.80, 1.0, 1.0),
    (1, "COMPLETE", True, 1.0, "", 0.90, 0.90, 4.0, 4.0),
    (2, "COMPLETE", False, 0.25, "mixup", 0.85, 0.85, 1.0, 3.0),  # baseline needs 2 s for 0.85: 2x
    (3, "COMPLETE", False, 0.5, "ema", 0.91, 0.91, 3.0, 1.5),  # reaches the longest baseline's 0.90 in 3 s
    (4, "COMPLETE", False, 2.0, "sam", 0.95, 0.95, 8.0, 8.0),  # beyond the baseline curve
    (5, "COMPLETE", False, 0.125, "blurpool", 0.75, 0.75, 0.5, 0.5),  # below the curve: a bound
    (6, "COMPLETE", False, 1.0, "cutout", 0.86, 0.86, 5.0, 5.0),  # dominated (by 3, and by 1)
    (7, "FAIL", False, 1.0, "sam", 0.99, 0.99, 0.1, 0.1),  # would dominate everything: not completed
    (8, "COMPLETE", False, 1.0, "ema", math.nan, math.nan, 2.0, 2.0),  # no metric
    (9, "COMPLETE", False, 1.0, "ema", 0.99, 0.99, 0.0, 0.0),  # zero time
    (10, "COMPLETE", False, 1.0, "ema", 0.99, 0.99, math.inf, 1.0),  # infinite time
    (11, "RUNNING", False, 1.0, "ema", math.nan, math.nan, math.nan, math.nan),
]


def non_dominated(df: pd.DataFrame, columns: list[str], signs: list[float]) -> set[int]:
    """Brute force: rows no other row beats (>= in every signed objective, > in one)."""
    v = df[columns].to_numpy(float) * np.asarray(signs)
    out = set()
    for i, number in enumerate(df["number"]):
        if not any((v[j] >= v[i]).all() and (v[j] > v[i]).any() for j in range(len(v)) if j != i):
            out.add(int(number))
    return out


def test_completed_is_complete_with_a_finite_metric_and_positive_finite_time():
    f = frontier(trials(ROWS), TEST)
    assert list(f.completed_trials["number"]) == [0, 1, 2, 3, 4, 5, 6]
    assert f.completed.index.equals(f.trials.index) and f.completed.dtype == bool
    # on val, a trial with a test accuracy but no val accuracy is not completed
    df = trials(ROWS)
    df.loc[df["number"] == 2, "val_accuracy"] = math.nan
    assert 2 not in set(frontier(df, VAL).completed_trials["number"])
    assert 2 in set(frontier(df, TEST).completed_trials["number"])


def test_front_is_the_non_dominated_completed_set_fastest_first():
    f = frontier(trials(ROWS), TEST)
    done = f.completed_trials
    # 0 loses to 2 (same time, less accurate), 1 to 3, 6 to 3; the failed 7 and timeless 9, 10 do not count
    assert set(f.front["number"]) == non_dominated(done, ["accuracy", "train_seconds"], [1, -1]) == {5, 2, 3, 4}
    assert list(f.front["number"]) == [5, 2, 3, 4]
    assert set(f.trials.loc[f.on_front, "number"]) == set(f.front["number"])
    assert f.objectives == ("accuracy", "train_seconds") and f.metric == "accuracy"


def test_equal_trials_both_stay_on_the_front_by_number():
    df = trials([*ROWS, (12, "COMPLETE", False, 0.25, "mixup", 0.85, 0.85, 1.0, 3.0)])  # a copy of trial 2
    assert list(frontier(df.iloc[::-1], TEST).front["number"]) == [5, 2, 12, 3, 4]


def test_per_budget_fronts_and_the_recipes_own_front():
    df = trials(ROWS)
    f = frontier(df, TEST)
    for budget, group in f.completed_trials.groupby("budget"):
        on = f.trials.loc[f.on_budget_front & f.trials["budget"].eq(budget), "number"]
        assert set(on) == non_dominated(group, ["accuracy", "train_seconds"], [1, -1])
    # without the baselines, 6 (0.86 in 5 s) is still beaten by 3; nothing else changes
    assert set(f.trials.loc[f.on_recipe_front, "number"]) == {5, 2, 3, 4}
    df.loc[df["number"] == 3, "train_seconds"] = 6.0  # now 6 is only beaten by the baseline 1
    g = frontier(df, TEST)
    assert 6 in set(g.trials.loc[g.on_recipe_front, "number"]) and 6 not in set(g.front["number"])


def test_cost_is_an_objective_only_when_every_completed_trial_has_one():
    f = frontier(trials(ROWS), WITH_COST)
    assert f.objectives == ("accuracy", "train_seconds", "cost") and not any("cost" in w for w in f.warnings)
    expected = non_dominated(f.completed_trials, ["accuracy", "train_seconds", "cost"], [1, -1, -1])
    assert set(f.front["number"]) == expected and 0 in expected  # 0: as fast as 2 and cheaper
    df = trials(ROWS)
    df.loc[df["number"] == 3, "cost"] = math.nan
    f = frontier(df, WITH_COST)
    assert f.objectives == ("accuracy", "train_seconds")
    assert any("cost is missing for some completed trials" in w for w in f.warnings)
    # a space judged on cost alone falls back to time, never to accuracy alone
    cost_only = Objectives(("accuracy", "cost"), ("maximize", "minimize"), "test")
    assert frontier(df, cost_only).objectives == ("accuracy", "train_seconds")
    assert frontier(trials(ROWS), cost_only).objectives == ("accuracy", "cost")


def same_headline(a, b) -> bool:
    """Field by field, NaN equal to NaN."""
    from dataclasses import astuple

    return all(x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
               for x, y in zip(astuple(a), astuple(b), strict=True))


def test_val_selection_ignores_the_test_accuracy():
    df = trials(ROWS)
    df["accuracy"] = df["accuracy"] - 0.3  # test accuracy unrelated to the selection metric
    f = frontier(df, VAL)
    permuted = df.assign(accuracy=np.random.default_rng(0).permutation(df["accuracy"].to_numpy()))
    g = frontier(permuted, VAL)
    assert f.metric == g.metric == "val_accuracy" and f.objectives == ("val_accuracy", "train_seconds")
    assert list(f.front["number"]) == list(g.front["number"]) == [5, 2, 3, 4]
    assert same_headline(f.headline, g.headline) and f.headline.baseline_accuracy == pytest.approx(0.90)
    cols = ["speedup", "speedup_status", "accuracy_gain"]
    pd.testing.assert_frame_equal(f.trials[cols], g.trials[cols])
    # the test accuracy stays in the rows for display (here trial 5's is even missing: it does not matter)
    np.testing.assert_array_equal(g.front["accuracy"], permuted.set_index("number").loc[[5, 2, 3, 4], "accuracy"])
    # the same permutation moves a test-selected front: the check above can fail
    assert list(frontier(permuted, TEST).front["number"]) != list(frontier(df, TEST).front["number"])


def test_speedup_columns_match_a_hand_computation():
    t = frontier(trials(ROWS), TEST).trials.set_index("number")
    # trial 2: 0.85 is halfway from 0.80 to 0.90, so log time is halfway: sqrt(1 * 4) = 2 s; 2 s / 1 s
    assert t.loc[2, "baseline_seconds"] == pytest.approx(2.0) and t.loc[2, "speedup"] == pytest.approx(2.0)
    assert t.loc[2, "speedup_status"] == "interpolated"
    # its accuracy gain at matched time: the baseline has 0.80 at 1 s
    assert t.loc[2, "accuracy_gain"] == pytest.approx(0.05) and t.loc[2, "baseline_accuracy_at_time"] == 0.80
    # trial 3 (0.91) is beyond the curve: no speedup; at 3 s the baseline reaches 0.80 + 0.1 * log(3)/log(4)
    assert t.loc[3, "speedup_status"] == "beyond_baseline" and math.isnan(t.loc[3, "speedup"])
    assert t.loc[3, "baseline_accuracy_at_time"] == pytest.approx(0.80 + 0.1 * math.log(3) / math.log(4))
    assert t.loc[3, "gain_status"] == "interpolated"
    # trial 5 is less accurate than the shortest baseline run: at most 1 s / 0.5 s
    assert t.loc[5, "speedup_status"] == "below_baseline" and t.loc[5, "speedup"] == pytest.approx(2.0)
    assert t.loc[5, "gain_status"] == "below_baseline" and t.loc[5, "accuracy_gain"] == pytest.approx(-0.05)
    assert t.loc[4, "gain_status"] == "beyond_baseline" and t.loc[4, "accuracy_gain"] == pytest.approx(0.05)
    # the baselines themselves sit on their curve
    assert t.loc[1, "speedup"] == pytest.approx(1.0)
    # trials that did not complete carry no speedup
    assert t.loc[[7, 8, 9, 10, 11], "speedup_status"].eq("").all() and t.loc[[7, 8, 9], "speedup"].isna().all()


def test_baseline_and_its_curve():
    df = trials(ROWS)
    df.loc[len(df)] = (12, "COMPLETE", True, 0.5, "", 0.78, 0.78, 2.0, 2.0)  # noisy: worse than the 1 s run
    f = frontier(df.iloc[::-1], TEST)  # input order does not matter
    assert list(f.baseline["number"]) == [0, 12, 1]  # by time
    assert list(f.baseline_curve.times) == [1.0, 4.0] and list(f.baseline_curve.accuracies) == [0.80, 0.90]
    assert list(f.trials["number"]) == list(df["number"].iloc[::-1])  # the input's rows, order and index kept


def test_headline_of_single_runs_claims_nothing():
    h = frontier(trials(ROWS), TEST).headline
    # no recipe has a curve (two or more budgets, repeated seeds): nothing is confirmed
    assert h.number is None and not h.confirmed and math.isnan(h.speedup)
    assert h.verdict.startswith("not confirmed")
    # the target is the baseline curve's best accuracy; the gain is measured against it
    assert h.baseline_accuracy == 0.90 and h.baseline_seconds == pytest.approx(4.0) and h.baseline_budget == 1.0
    assert h.gain_number == 3 and h.accuracy_gain == pytest.approx(0.01)  # best accuracy within 4 s
    # largest measured speedup on the front: trial 2 (2x interpolated); 5's 2x is only a bound
    assert (h.front_number, h.front_speedup, h.front_accuracy, h.front_seconds) == (2, pytest.approx(2.0), 0.85, 1.0)
    assert h.front_algorithms == "mixup" and h.front_budget == 0.25


def test_warnings_and_empty_inputs():
    no_base = frontier(trials([r for r in ROWS if not r[2]]), TEST)
    assert no_base.baseline.empty and (no_base.front["speedup_status"] == "no_baseline").all()
    assert any("no completed baseline trial" in w for w in no_base.warnings)
    assert no_base.headline.number is None and math.isnan(no_base.headline.baseline_accuracy)
    one = frontier(trials([r for r in ROWS if r[0] != 1]), TEST)
    assert any("the baseline curve has one point" in w for w in one.warnings)
    for df in (pd.DataFrame(), trials([]), trials(ROWS)[["number", "state", "accuracy", "train_seconds"]]):
        f = frontier(df, TEST)
        assert len(f.front) == f.on_front.sum() and f.headline.number is None
    assert frontier(pd.DataFrame(), TEST).warnings == ()


def test_times_from_different_hardware_are_never_compared():
    df = trials(ROWS)
    df["hardware"] = "GPU A"
    # a faster card ran one baseline run and trial 2: on it, everything looks faster
    extra = trials([(20, "COMPLETE", True, 1.0, "", 0.90, 0.90, 1.0, 1.0),
                    (21, "COMPLETE", False, 0.25, "mixup", 0.85, 0.85, 0.2, 0.2)])
    extra["hardware"] = "GPU B"
    mixed = pd.concat([df, extra], ignore_index=True)
    f, alone = frontier(mixed, TEST), frontier(df, TEST)
    # the baseline's class (most completed baseline runs) is compared; the other class's runs are left out
    assert set(f.completed_trials["number"]) == set(alone.completed_trials["number"])
    assert f.baseline_curve.times.tolist() == alone.baseline_curve.times.tolist()
    assert f.front["number"].tolist() == alone.front["number"].tolist()
    assert any("2 hardware classes (GPU A: 7 runs, GPU B: 2 runs)" in w and "GPU A only" in w for w in f.warnings)
    # one class, or studies from before the column (empty / NaN): nothing left out, no warning
    assert not any("hardware" in w for w in alone.warnings)
    old = mixed.copy()
    old["hardware"] = np.nan
    assert len(frontier(old, TEST).completed_trials) == 9
