"""recipesearch/analysis/frontier.py with repeated seeds: points are seed means, the front is made of
confirmed recipes, curve-vs-curve speedups carry a bootstrap interval, and test never selects."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from recipesearch.analysis import Objectives, bootstrap_curve_speedup, curve_speedup, frontier

VAL = Objectives(("accuracy", "train_seconds"), ("maximize", "minimize"), "val")
BASE = {0.25: (1.0, 0.80), 0.5: (2.0, 0.85), 1.0: (4.0, 0.90)}  # budget: (seconds, val accuracy)
NOISE = (-0.004, 0.0, 0.004)  # three seeds, mean 0


def runs(key: str, curve: dict[float, tuple[float, float]], seeds=NOISE, is_baseline=False, start=0,
         test_shift=-0.02) -> list[dict]:
    out = []
    for budget, (secs, acc) in curve.items():
        for k, noise in enumerate(seeds):
            out.append({"number": start + len(out), "state": "COMPLETE", "is_baseline": is_baseline,
                        "budget": budget, "algorithms": "" if is_baseline else key, "recipe_key": key,
                        "val_accuracy": acc + noise, "accuracy": acc + noise + test_shift,
                        "train_seconds": secs * (1 + noise), "seed": k})
    return out


def table(*groups: list[dict]) -> pd.DataFrame:
    rows = [r for g in groups for r in g]
    for i, r in enumerate(rows):
        r["number"] = i
    return pd.DataFrame(rows)


def test_points_are_seed_means_with_intervals():
    f = frontier(table(runs("baseline", BASE, is_baseline=True)), VAL)
    p = f.baseline_points
    assert list(p["budget"]) == [0.25, 0.5, 1.0] and (p["n_seeds"] == 3).all()
    assert p["val_accuracy"].to_numpy() == pytest.approx([0.80, 0.85, 0.90])
    assert p["test_accuracy_mean"].to_numpy() == pytest.approx([0.78, 0.83, 0.88])
    half = 0.004 * 2 / math.sqrt(3) * 0 + np.std(NOISE, ddof=1) / math.sqrt(3) * 4.302652729911275  # t(0.975, 2)
    assert p["val_accuracy_ci_high"].to_numpy() - p["val_accuracy_mean"].to_numpy() == pytest.approx([half] * 3)
    assert not {"accuracy_mean", "accuracy_ci_low", "test_accuracy_ci_low"} & set(p.columns)  # named by split
    assert list(f.baseline_curve.times) == pytest.approx([1.0, 2.0, 4.0])


def test_a_recipe_faster_on_one_seed_only_is_not_confirmed():
    base = runs("baseline", BASE, is_baseline=True)
    # on seed 0 it would be 2x faster at every accuracy, the target (the baseline at budget 1: 0.90) included
    lucky = {0.25: (1.0, 0.85), 0.5: (2.0, 0.90), 1.0: (4.0, 0.95)}
    recipe = runs("lucky", lucky, seeds=(0.0,))
    f = frontier(table(base, recipe), VAL)
    row = f.recipes.iloc[0]
    assert row["speedup"] == pytest.approx(2.0) and row["n_seeds"] == 1 and not row["confirmed"]
    assert not f.headline.confirmed and f.headline.number is None
    assert f.headline.verdict.startswith("not confirmed") and "(one seed)" in f.headline.verdict
    # the same recipe, now with three seeds that all hold up, is confirmed
    f = frontier(table(base, runs("steady", lucky)), VAL)
    assert f.recipes.iloc[0]["confirmed"] and f.headline.confirmed
    assert f.headline.speedup == pytest.approx(2.0, rel=0.05)
    assert f.headline.speedup_ci_low > 1 and "confirmed: trial" in f.headline.verdict
    # a recipe a hair better than the baseline on average, with seeds that disagree widely: not confirmed
    hair = {b: (secs * 0.95, acc + 0.003) for b, (secs, acc) in BASE.items()}
    wild = frontier(table(base, runs("wild", hair, seeds=(-0.03, 0.0, 0.03))), VAL)
    assert wild.recipes.iloc[0]["speedup"] > 1 and not wild.recipes.iloc[0]["confirmed"]
    assert not wild.headline.confirmed and wild.headline.verdict.startswith("nothing beat the baseline")


def test_curve_speedup_and_interval_match_the_numerics():
    base = runs("baseline", BASE, is_baseline=True)
    faster = {0.25: (0.7, 0.82), 0.5: (1.4, 0.86), 1.0: (2.8, 0.92)}
    rec = runs("r", faster)
    f = frontier(table(base, rec), VAL)
    got = f.recipes.iloc[0]
    # the point estimate: curve_speedup on the per-budget means, at the target: the baseline at budget 1
    point = curve_speedup([0.7, 1.4, 2.8], [0.82, 0.86, 0.92], [1.0, 2.0, 4.0], [0.80, 0.85, 0.90], target=0.90)
    assert got["speedup"] == pytest.approx(point.speedup, rel=1e-3) and got["target_accuracy"] == pytest.approx(0.90)
    assert f.target.accuracy == pytest.approx(0.90) and f.target.source == "the baseline at budget 1"
    # by hand: the baseline reaches 0.90 at 4 s; the recipe at log-interpolated 1.4 * 2^(0.04/0.06) s
    assert got["speedup"] == pytest.approx(4.0 / (1.4 * 2 ** (2 / 3)), rel=1e-3)
    # the interval is bootstrap_curve_speedup's at that target, seeded
    want = bootstrap_curve_speedup(pd.DataFrame(rec), pd.DataFrame(base), 0.90, n_boot=1000, rng=0,
                                   acc_col="val_accuracy")
    assert (got["speedup_ci_low"], got["speedup_ci_high"]) == pytest.approx((want.ci_low, want.ci_high))


def test_the_front_is_made_of_confirmed_points_once_any_exist():
    base = runs("baseline", BASE, is_baseline=True)
    confirmed = runs("c", {0.25: (0.9, 0.82), 0.5: (1.8, 0.87)})
    single = runs("s", {0.5: (0.5, 0.95)}, seeds=(0.0,))  # one run that would dominate everything
    f = frontier(table(base, confirmed, single), VAL)
    assert f.confirmed_front
    keys = set(f.front["recipe_key"])
    assert "s" not in keys and "c" in keys
    point = f.points.set_index("recipe_key").loc["s"]
    assert not point["eligible"] and not point["on_front"]
    # without any confirmed recipe the single runs make the front, with a warning
    g = frontier(table(base, single), VAL)
    assert not g.confirmed_front and "s" in set(g.front["recipe_key"])
    assert any("single runs" in w for w in g.warnings)


def test_test_labels_never_select():
    base = runs("baseline", BASE, is_baseline=True)
    rec = runs("r", {0.25: (0.7, 0.82), 0.5: (1.4, 0.86), 1.0: (2.8, 0.92)})
    other = runs("o", {0.25: (0.5, 0.79), 1.0: (3.0, 0.91)})
    df = table(base, rec, other)
    permuted = df.assign(accuracy=np.random.default_rng(1).permutation(df["accuracy"].to_numpy()))
    f, g = frontier(df, VAL), frontier(permuted, VAL)
    assert list(f.front["number"]) == list(g.front["number"])
    pd.testing.assert_frame_equal(f.recipes, g.recipes)
    assert (f.headline.number, f.headline.speedup, f.headline.verdict) == \
        (g.headline.number, g.headline.speedup, g.headline.verdict)
    # the test means do move: they are shown, not used
    assert not np.allclose(f.points["test_accuracy_mean"], g.points["test_accuracy_mean"])


def test_a_rerun_with_the_same_seed_counts_once_and_the_base_recipe_is_the_baseline():
    base = runs("baseline", BASE, is_baseline=True)
    rerun = dict(base[0], number=99)  # budget 0.25, seed 0 again: the same measurement twice
    sweep = dict(base[3], number=100, is_baseline=False, recipe_key="baseline", stage="tune", seed=7)
    f = frontier(table(base, [rerun, sweep]), VAL)
    p = f.baseline_points.set_index("budget")
    assert p.loc[0.25, "n_seeds"] == 3  # not 4
    assert p.loc[0.5, "n_seeds"] == 4 and f.trials["is_baseline"].sum() == 11  # the sweep's run is a baseline run


def test_a_lone_run_past_a_curve_cut_at_the_target_is_not_part_of_the_curve():
    """A curve confirmed up to the budget that reached the target (3 seeds at 0.25 and 0.5), and a later proposal of
    the same recipe at budget 1 (one seed): the curve is the repeated budgets, confirmed, not a one-seed curve."""
    base = runs("baseline", BASE, is_baseline=True)
    fast = {0.25: (0.5, 0.86), 0.5: (1.0, 0.92)}
    lone = runs("fast", {1.0: (2.0, 0.95)}, seeds=(0.0,))
    f = frontier(table(base, runs("fast", fast), lone), VAL)
    row = f.recipes.iloc[0]
    assert row["n_budgets"] == 2 and row["n_seeds"] == 3 and row["confirmed"] and f.headline.confirmed
    # the sequential rule looks at the same curve (analysis/sequential.py)
    from recipesearch.analysis.sequential import CONFIRMED, look

    both = pd.DataFrame(runs("fast", fast) + lone)
    assert look(both, pd.DataFrame(base), 0.90, "val_accuracy") == CONFIRMED
    # single runs at every budget stay a (one-seed) curve, as before
    single = frontier(table(base, runs("fast", {**fast, 1.0: (2.0, 0.95)}, seeds=(0.0,))), VAL).recipes.iloc[0]
    assert single["n_budgets"] == 3 and single["n_seeds"] == 1 and not single["confirmed"]


def test_a_one_seed_baseline_budget_draws_the_curve_but_claims_use_the_repeated_ones():
    """``baseline.seeds_elsewhere: 1``: the baseline at 0.25 on one seed, at 0.5 and 1 on three. The one-seed
    point stays on the baseline's curve (single-run speedups) and anchors a recipe's curve to the target, which is
    confirmed on the repeated seeds, while a point below the repeated budgets has no interval."""
    base = runs("baseline", {0.5: BASE[0.5], 1.0: BASE[1.0]}, is_baseline=True) \
        + runs("baseline", {0.25: BASE[0.25]}, seeds=(0.0,), is_baseline=True)
    fast = runs("fast", {0.25: (0.5, 0.86), 0.5: (1.0, 0.92)})
    low = runs("low", {0.25: (0.4, 0.82)})
    f = frontier(table(base, fast, low), VAL)
    assert len(f.baseline_curve.times) == 3  # every budget draws the curve
    row = f.recipes.set_index("recipe_key").loc["fast"]
    assert row["confirmed"] and f.headline.confirmed and f.headline.number == row["number"]
    assert math.isclose(row["baseline_seconds"], 4.0, rel_tol=0.01)  # the target, read at budget 1
    point = f.points[f.points["recipe_key"].eq("low")].iloc[0]
    assert point["speedup_status"] == "interpolated" and point["speedup"] > 1  # against the one-seed point
    assert math.isnan(point["speedup_ci_low"]) and not point["confirmed"]  # below the repeated budgets: no claim
    # the sequential rule the search stops on decides it as the report does (analysis/sequential.py)
    from recipesearch.analysis.sequential import CONFIRMED, look

    assert look(pd.DataFrame(fast), pd.DataFrame(base), 0.90, "val_accuracy") == CONFIRMED
