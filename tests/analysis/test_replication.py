"""recipesearch/analysis/replication.py: claims of a frontier, the interleaved plan of fresh runs, and the
fresh speedup of each claim with its interval, scored on test."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from recipesearch.analysis import Objectives, frontier
from recipesearch.analysis.replication import (
    BASELINE_ARM,
    FRESH_SEED_OFFSET,
    Claim,
    claims_of,
    inside_share,
    plan_runs,
    score_claims,
)

VAL = Objectives(("accuracy", "train_seconds"), ("maximize", "minimize"), "val")
BASE = {0.25: (1.0, 0.80), 0.5: (2.0, 0.85), 1.0: (4.0, 0.90)}  # budget: (seconds, val accuracy)
FAST = {0.25: (0.5, 0.82), 0.5: (1.0, 0.87), 1.0: (2.0, 0.92)}  # 2x faster and a little better
NOISE = (-0.004, 0.0, 0.004)


def runs(key, curve, seeds=NOISE, is_baseline=False, test_shift=-0.02, seed_index=0, arm=False):
    out = []
    for budget, (secs, acc) in curve.items():
        for k, noise in enumerate(seeds):
            row = {"state": "COMPLETE", "is_baseline": is_baseline, "budget": budget,
                   "algorithms": "" if is_baseline else key, "recipe_key": key, "val_accuracy": acc + noise,
                   "accuracy": acc + noise + test_shift, "train_seconds": secs * (1 + noise), "seed": k}
            if arm:
                row.update(arm=key, seed_index=seed_index + k)
            out.append(row)
    return out


def table(*groups):
    rows = [r for g in groups for r in g]
    for i, r in enumerate(rows):
        r["number"] = i
    return pd.DataFrame(rows)


def test_claims_are_the_confirmed_curve_and_points():
    f = frontier(table(runs("baseline", BASE, is_baseline=True), runs("fast", FAST),
                       runs("lucky", {0.5: (0.4, 0.95)}, seeds=(0.0,))), VAL)
    claims = claims_of(f, "confirmed")
    kinds = sorted((c.kind, c.recipe_key) for c in claims)
    assert ("curve", "fast") in kinds and all(key == "fast" for _, key in kinds)  # one seed never confirms
    curve = next(c for c in claims if c.kind == "curve")
    assert curve.budgets == (0.25, 0.5, 1.0) and curve.headline and curve.confirmed
    assert curve.ci_low > 1 and curve.speedup == pytest.approx(f.headline.speedup)
    assert [c.kind for c in claims_of(f, "headline")] == ["curve"]
    assert len(claims_of(f, "all")) >= len(claims)
    with pytest.raises(ValueError, match="claims must be one of"):
        claims_of(f, "some")


def test_no_confirmed_claim_is_an_empty_list():
    hair = {b: (secs * 0.95, acc + 0.003) for b, (secs, acc) in BASE.items()}
    f = frontier(table(runs("baseline", BASE, is_baseline=True), runs("wild", hair, seeds=(-0.03, 0.0, 0.03))), VAL)
    assert claims_of(f, "confirmed") == [] and claims_of(f, "headline") == []
    assert [c.kind for c in claims_of(f, "all")][:1] == ["curve"]


def claim(key="fast", budgets=(0.25, 0.5), kind="curve", ci=(2.0, 3.2)):
    return Claim(kind, key, 7, key, budgets, 2.0, ci[0], ci[1], 0.87, True, headline=kind == "curve")


def test_the_plan_interleaves_arms_seed_by_seed_in_rotated_order():
    plan = plan_runs([claim(), claim(kind="point", budgets=(0.5,))], [0.25, 0.5, 1.0], baseline_number=0, seeds=2)
    # the baseline at its 3 budgets, the recipe at its 2 (the point adds no run): 5 runs per seed
    assert len(plan) == 10
    assert [r.seed_index for r in plan] == [FRESH_SEED_OFFSET] * 5 + [FRESH_SEED_OFFSET + 1] * 5
    first = [(r.budget, r.arm) for r in plan[:5]]
    assert first == [(0.25, BASELINE_ARM), (0.25, "fast"), (0.5, "fast"), (0.5, BASELINE_ARM), (1.0, BASELINE_ARM)]
    second = [(r.budget, r.arm) for r in plan[5:]]
    assert second == [(0.25, "fast"), (0.25, BASELINE_ARM), (0.5, BASELINE_ARM), (0.5, "fast"), (1.0, BASELINE_ARM)]
    # every arm leads as often as it follows, over seeds
    leads = [plan[i].arm for i in (0, 2, 5, 7)]
    assert leads.count(BASELINE_ARM) == leads.count("fast") == 2
    with pytest.raises(ValueError, match="seeds must be at least 1"):
        plan_runs([claim()], [1.0], 0, seeds=0)


def fresh(recipe_curve, test_shift=-0.02):
    return pd.DataFrame(runs(BASELINE_ARM, BASE, is_baseline=True, arm=True, seed_index=FRESH_SEED_OFFSET)
                        + runs("fast", recipe_curve, arm=True, seed_index=FRESH_SEED_OFFSET, test_shift=test_shift))


def test_a_claim_that_holds_is_inside_and_one_that_does_not_is_outside():
    scored = score_claims([claim()], fresh(FAST))
    row = scored.iloc[0]
    # the baseline reaches the recipe's best, 0.87 on test - 0.02, at 2 * 2^0.4 s by log interpolation
    assert row["fresh_speedup"] == pytest.approx(2 * 2 ** 0.4, rel=0.05) and row["inside"]
    assert row["fresh_ci_low"] < row["fresh_speedup"] < row["fresh_ci_high"]
    assert row["fresh_seeds"] == 3 and row["fresh_runs"] == 6 and math.isfinite(row["fresh_speedup_val"])
    slow = {b: (secs * 1.8, acc) for b, (secs, acc) in FAST.items()}  # the recipe lost its edge on this machine
    row = score_claims([claim()], fresh(slow)).iloc[0]
    assert row["fresh_speedup"] < 2.0 and not row["inside"]
    assert inside_share(pd.concat([scored, score_claims([claim()], fresh(slow))])) == 0.5


def test_a_claim_without_fresh_runs_is_not_inside():
    row = score_claims([claim()], fresh(FAST).query("arm == 'baseline'")).iloc[0]
    assert row["fresh_status"] == "no runs" and not row["inside"] and row["fresh_runs"] == 0
