"""recipesearch/analysis/paired_baseline.py and its use in the frontier: once the confirmation stage has re-run
the baseline beside the candidates, speedups are measured against that paired baseline, and a baseline whose
times moved between the two is named."""
from __future__ import annotations

import pandas as pd
import pytest

from recipesearch.analysis import Objectives, curve_speedup, frontier
from recipesearch.analysis.paired_baseline import (
    baseline_masks,
    baseline_shift,
    covers,
    probe_moved,
    shift_warning,
)

VAL = Objectives(("accuracy", "train_seconds"), ("maximize", "minimize"), "val")
BASE = {0.25: (1.0, 0.80), 0.5: (2.0, 0.85), 1.0: (4.0, 0.90)}
FAST = {0.25: (0.7, 0.82), 0.5: (1.4, 0.86), 1.0: (2.8, 0.92)}
NOISE = (-0.004, 0.0, 0.004)


def runs(key, curve, stage, is_baseline=False, slower=1.0):
    return [{"state": "COMPLETE", "is_baseline": is_baseline, "budget": b, "algorithms": "" if is_baseline else key,
             "recipe_key": key, "val_accuracy": acc + n, "accuracy": acc + n - 0.02,
             "train_seconds": secs * slower * (1 + n), "seed": k, "stage": stage}
            for b, (secs, acc) in curve.items() for k, n in enumerate(NOISE)]


def table(*groups):
    rows = [r for g in groups for r in g]
    return pd.DataFrame([{**r, "number": i} for i, r in enumerate(rows)])


def test_speedups_are_measured_against_the_paired_baseline_and_a_moved_baseline_is_named():
    # the baseline stage ran on an idle machine; the proposals and the confirmation on one 1.5x slower
    early = runs("baseline", BASE, "baseline", is_baseline=True)
    paired = runs("baseline", BASE, "confirm", is_baseline=True, slower=1.5)
    recipe = runs("r", FAST, "confirm", slower=1.5)
    f = frontier(table(early, recipe, paired), VAL)
    assert f.paired and set(f.baseline["stage"]) == {"confirm"} and set(f.early_baseline["stage"]) == {"baseline"}
    want = curve_speedup([1.05, 2.1, 4.2], [0.82, 0.86, 0.92], [1.5, 3.0, 6.0], [0.80, 0.85, 0.90], target=0.90).speedup
    assert f.recipes.iloc[0]["speedup"] == pytest.approx(want, rel=1e-3)
    assert list(f.early_baseline_curve.times) == pytest.approx([1.0, 2.0, 4.0])
    assert f.baseline_shift["moved"].all() and any("moved during the search" in w for w in f.warnings)
    # against the early baseline alone the same recipe would look slower than it is, by the machine's 1.5x
    unpaired = frontier(table(early, recipe), VAL)
    assert not unpaired.paired and unpaired.recipes.iloc[0]["speedup"] == pytest.approx(want / 1.5, rel=1e-3)


def test_a_steady_machine_is_not_named_and_a_partial_paired_baseline_is_not_used():
    early = runs("baseline", BASE, "baseline", is_baseline=True)
    paired = runs("baseline", BASE, "confirm", is_baseline=True)
    f = frontier(table(early, runs("r", FAST, "confirm"), paired), VAL)
    assert f.paired and not f.baseline_shift["moved"].any() and shift_warning(f.baseline_shift) is None
    one_budget = [r for r in paired if r["budget"] == 0.25]  # the confirmation has only begun
    g = frontier(table(early, runs("r", FAST, "confirm"), one_budget), VAL)
    assert not g.paired and set(g.baseline["stage"]) == {"baseline"}


def test_the_masks_and_cover_rule_on_plain_tables():
    df = table(runs("baseline", BASE, "baseline", is_baseline=True), runs("baseline", BASE, "confirm", True))
    done = pd.Series(True, index=df.index)
    paired, early = baseline_masks(df, done)
    assert paired.sum() == early.sum() == 9 and not (paired & early).any()
    assert covers(df[early], df[paired]) and not covers(df[early], df[paired].head(5))
    shift = baseline_shift(df[early], df[paired], "val_accuracy", 0.95)
    assert list(shift["budget"]) == [0.25, 0.5, 1.0] and not shift["moved"].any()


def test_a_probe_moved_only_beyond_the_tolerance_of_the_early_runs_mean():
    early = [3.0, 3.1, 2.9]
    assert not probe_moved(early, 3.0) and not probe_moved(early, 3.4) and not probe_moved(early, 2.65)
    assert probe_moved(early, 3.6) and probe_moved(early, 2.5)  # 20 % slower, 17 % faster
    assert not probe_moved([3.0, float("nan"), 0.0], 3.2)  # unusable early times are left out
    assert probe_moved([], 3.0) and probe_moved([float("nan")], 3.0) and probe_moved(early, 0.0)  # nothing to go on
