from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from recipesearch.analysis.curve_speedup import CurveSpeedup, curve_speedup
from recipesearch.analysis.speedup_bootstrap import (
    _REACHED,
    _SHORT,
    _rows_time_to_reach,
    bootstrap_curve_speedup,
    confirmed_faster,
)

BUDGETS = [0.25, 0.5, 1.0, 2.0, 4.0]
BASE_SECONDS = np.array([10.0, 20.0, 40.0, 80.0, 160.0])
BASE_ACCURACY = np.array([0.80, 0.86, 0.90, 0.93, 0.95])


def _runs(seconds: np.ndarray, accuracy: np.ndarray, seeds: int = 3) -> pd.DataFrame:
    """Long table; ``seconds``/``accuracy`` are [budget, seed] arrays or per-budget vectors."""
    seconds = np.broadcast_to(np.asarray(seconds, float).reshape(len(BUDGETS), -1), (len(BUDGETS), seeds))
    accuracy = np.broadcast_to(np.asarray(accuracy, float).reshape(len(BUDGETS), -1), (len(BUDGETS), seeds))
    return pd.DataFrame(
        [
            {"budget": b, "seed": s, "train_seconds": seconds[i, s], "accuracy": accuracy[i, s]}
            for i, b in enumerate(BUDGETS)
            for s in range(seeds)
        ]
    )


def _noisy(rng: np.random.Generator, values: np.ndarray, scale: float, relative: bool) -> np.ndarray:
    noise = rng.normal(0.0, scale, size=(len(values), 3))
    return values[:, None] * (1 + noise) if relative else values[:, None] + noise


def _baseline(rng: np.random.Generator) -> pd.DataFrame:
    return _runs(_noisy(rng, BASE_SECONDS, 0.02, True), _noisy(rng, BASE_ACCURACY, 0.002, False))


def test_consistently_twice_as_fast_is_confirmed():
    rng = np.random.default_rng(1)
    base = _baseline(rng)
    recipe = _runs(_noisy(rng, BASE_SECONDS / 2, 0.02, True), _noisy(rng, BASE_ACCURACY, 0.002, False))
    r = bootstrap_curve_speedup(recipe, base, rng=0)
    assert r.speedup == pytest.approx(2.0, rel=0.1)
    assert 1.0 < r.ci_low < 2.0 < r.ci_high
    assert r.recipe_min_seeds == 3 and r.baseline_min_seeds == 3 and r.n_boot == 2000
    assert 0 < r.n_finite <= 2000
    assert confirmed_faster(r)


def test_one_lucky_seed_is_not_confirmed():
    rng = np.random.default_rng(2)
    base = _baseline(rng)
    # Seed 0 runs in a quarter of the baseline's time, seeds 1 and 2 are 5 % slower: the mean looks
    # ~1.3x faster, but replicates drawing neither budget's lucky run (8/27 squared, ~9 %, of them at a
    # target between two budgets) are slower than the baseline.
    factor = np.array([0.25, 1.05, 1.05])
    recipe = _runs(BASE_SECONDS[:, None] * factor, BASE_ACCURACY)
    r = bootstrap_curve_speedup(recipe, base, target=0.88, rng=0)
    assert r.speedup > 1.2 and r.status == "interpolated"
    assert r.ci_low < 1.0
    assert not confirmed_faster(r)


def test_single_seed_is_never_confirmed():
    rng = np.random.default_rng(3)
    base = _baseline(rng)
    recipe = _runs(BASE_SECONDS / 4, BASE_ACCURACY, seeds=1)
    r = bootstrap_curve_speedup(recipe, base, rng=0)
    assert r.recipe_min_seeds == 1 and r.ci_low > 1.0  # a collapsed interval would pass ci_low > 1 ...
    assert not confirmed_faster(r)  # ... but one seed measures no noise


def test_failed_runs_are_not_seeds():
    rng = np.random.default_rng(10)
    base = _baseline(rng)
    recipe = _runs(_noisy(rng, BASE_SECONDS / 2, 0.02, True), _noisy(rng, BASE_ACCURACY, 0.002, False))
    broken = recipe.copy()
    broken.loc[0, "accuracy"] = np.nan  # a diverged run at the first budget
    broken.loc[4, "train_seconds"] = 0.0  # a broken timing at the second
    r = bootstrap_curve_speedup(broken, base, n_boot=200, rng=0)
    assert r.recipe_min_seeds == 2
    kept = bootstrap_curve_speedup(broken.drop(index=[0, 4]), base, n_boot=200, rng=0)
    assert r == kept
    empty = bootstrap_curve_speedup(recipe.assign(accuracy=np.nan), base, n_boot=200, rng=0)
    assert empty.status == "no_recipe" and empty.recipe_min_seeds == 0 and not confirmed_faster(empty)


def test_confirmed_faster_needs_every_condition():
    good = CurveSpeedup(2.0, 0.9, 20.0, 10.0, "interpolated", ci_low=1.5, ci_high=2.5, confidence=0.95,
                        n_boot=100, n_finite=100, recipe_unreached_fraction=0.0, baseline_below_fraction=0.0,
                        recipe_min_seeds=2, baseline_min_seeds=2)
    assert confirmed_faster(good)
    assert not confirmed_faster(good._replace(ci_low=1.0))
    assert not confirmed_faster(good._replace(ci_low=float("nan")))
    assert not confirmed_faster(good._replace(baseline_min_seeds=1))
    # more than the lower tail's share (2.5 %) of replicates without a speedup: not shown to be faster
    assert not confirmed_faster(good._replace(n_finite=97)) and confirmed_faster(good._replace(n_finite=98))
    assert not confirmed_faster(good._replace(speedup=float("nan"), status="recipe_short"))


def test_bootstrap_is_deterministic_given_the_seed():
    rng = np.random.default_rng(4)
    base = _baseline(rng)
    recipe = _runs(_noisy(rng, BASE_SECONDS / 1.5, 0.05, True), _noisy(rng, BASE_ACCURACY, 0.003, False))
    first = bootstrap_curve_speedup(recipe, base, n_boot=500, rng=11)
    assert bootstrap_curve_speedup(recipe, base, n_boot=500, rng=11) == first
    assert bootstrap_curve_speedup(recipe, base, n_boot=500, rng=np.random.default_rng(11)) == first
    assert bootstrap_curve_speedup(recipe, base, n_boot=500, rng=12).ci_low != first.ci_low
    # The point estimate does not depend on the draws.
    assert bootstrap_curve_speedup(recipe, base, n_boot=500, rng=12).speedup == first.speedup


def test_target_is_fixed_from_the_point_estimate_and_can_be_given():
    rng = np.random.default_rng(5)
    base = _baseline(rng)
    recipe = _runs(_noisy(rng, BASE_SECONDS / 2, 0.02, True), _noisy(rng, BASE_ACCURACY, 0.002, False))
    means = recipe.groupby("budget")[["train_seconds", "accuracy"]].mean()
    base_means = base.groupby("budget")[["train_seconds", "accuracy"]].mean()
    point = curve_speedup(means["train_seconds"], means["accuracy"],
                          base_means["train_seconds"], base_means["accuracy"], target=0.9)
    r = bootstrap_curve_speedup(recipe, base, target=0.9, rng=0)
    assert r.target_accuracy == 0.9 and r.speedup == pytest.approx(point.speedup)
    # Mid-curve every replicate brackets the target, so none is left out.
    assert r.n_finite == r.n_boot and r.recipe_unreached_fraction == 0.0


def test_recipe_short_of_the_target_in_every_replicate():
    rng = np.random.default_rng(6)
    base = _baseline(rng)
    recipe = _runs(_noisy(rng, BASE_SECONDS / 2, 0.02, True), _noisy(rng, BASE_ACCURACY - 0.05, 0.001, False))
    r = bootstrap_curve_speedup(recipe, base, target=0.93, n_boot=200, rng=0)
    assert r.status == "recipe_short" and r.recipe_unreached_fraction == 1.0
    assert r.n_finite == 0 and math.isnan(r.ci_low) and not confirmed_faster(r)


def test_reads_only_the_named_accuracy_column():
    rng = np.random.default_rng(7)
    base = _baseline(rng).rename(columns={"accuracy": "val_accuracy"})
    recipe = _runs(_noisy(rng, BASE_SECONDS / 2, 0.02, True), _noisy(rng, BASE_ACCURACY, 0.002, False))
    recipe = recipe.rename(columns={"accuracy": "val_accuracy"})
    base["accuracy"] = rng.uniform(0.5, 1.0, len(base))  # a test-accuracy column that must be ignored
    recipe["accuracy"] = rng.uniform(0.5, 1.0, len(recipe))
    args = {"acc_col": "val_accuracy", "n_boot": 300, "rng": 0}
    before = bootstrap_curve_speedup(recipe, base, **args)
    shuffled = bootstrap_curve_speedup(
        recipe.assign(accuracy=rng.permutation(recipe["accuracy"].to_numpy())),
        base.assign(accuracy=rng.permutation(base["accuracy"].to_numpy())),
        **args,
    )
    dropped = bootstrap_curve_speedup(recipe.drop(columns=["accuracy", "seed"]),
                                      base.drop(columns=["accuracy", "seed"]), **args)
    assert shuffled == before and dropped == before
    assert bootstrap_curve_speedup(recipe, base, n_boot=300, rng=0) != before  # the column matters


def test_rows_agree_with_curve_speedup_on_random_curves():
    rng = np.random.default_rng(8)
    times = rng.uniform(1.0, 100.0, size=(300, 4))
    accs = rng.choice([0.70, 0.75, 0.80, 0.85, 0.90], size=(300, 4))  # ties exercise the envelope
    times[::10, 1] = times[::10, 0]  # equal times in some rows
    targets = rng.choice([0.65, 0.70, 0.72, 0.80, 0.83, 0.90, 0.95], size=300)
    ref = (np.array([10.0, 1000.0]), np.array([0.0, 1.0]))  # a baseline that brackets every target
    for target in np.unique(targets):
        rows = targets == target
        out, code = _rows_time_to_reach(times[rows], accs[rows], float(target))
        for row_t, row_a, t, c in zip(times[rows], accs[rows], out, code):
            expected = curve_speedup(row_t, row_a, *ref, target=float(target))
            if expected.status == "recipe_short":
                assert c == _SHORT and math.isnan(t)
            else:
                assert t == pytest.approx(expected.recipe_time, rel=1e-12)
                assert (c == _REACHED) == (expected.status == "interpolated")


def test_a_one_seed_baseline_budget_is_an_anchor_among_repeated_ones():
    """``baseline.seeds_elsewhere``: the baseline's one seed at 0.25 below three at 0.5 and 1. Each replicate draws
    that run, so a replicate whose 0.5 mean beats the target is measured between 0.25 and 0.5 instead of having no
    speedup; the claim still needs repeated seeds where it is read, so the lone run does not make the baseline a
    one-seed curve. Alone beside one repeated budget it is a one-seed curve again."""
    base = pd.DataFrame({"budget": [0.25] + [0.5] * 3 + [1.0] * 3,
                         "accuracy": [0.80, 0.96, 0.97, 0.98, 0.975, 0.98, 0.985],
                         "train_seconds": [1.0, 2.0, 2.1, 1.9, 4.0, 4.1, 3.9]})
    recipe = pd.DataFrame({"budget": [0.25] * 3 + [0.5] * 3, "accuracy": [0.97, 0.975, 0.98, 0.985, 0.99, 0.99],
                           "train_seconds": [0.9, 1.0, 1.1, 1.8, 2.0, 2.2]})
    anchored = bootstrap_curve_speedup(recipe, base, target=0.98, n_boot=500, rng=0)
    bare = bootstrap_curve_speedup(recipe, base[base["budget"] > 0.25], target=0.98, n_boot=500, rng=0)
    assert anchored.baseline_min_seeds == 3 and bare.baseline_min_seeds == 3
    assert anchored.baseline_below_fraction == 0 < bare.baseline_below_fraction  # 0.5 beats 0.98 in some replicates
    assert anchored.n_finite > bare.n_finite
    lone = bootstrap_curve_speedup(recipe, base[base["budget"] < 1.0], target=0.97, n_boot=50, rng=0)
    assert lone.baseline_min_seeds == 1 and not confirmed_faster(lone)
