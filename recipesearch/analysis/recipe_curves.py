"""Recipe curves: each recipe trained at two or more budgets, against the baseline's curve.

MosaicML's curve-vs-curve speedup: the time the baseline's curve needs to reach the search's target accuracy
(``analysis.target``; without one, the higher accuracy both curves reach), over the recipe's time, with a
bootstrap interval over seeds; *confirmed* when the interval's lower bound is above 1
(``analysis.speedup_bootstrap``). A frontier point speaks for one budget; a recipe curve is the claim the
headline makes, since it holds across budgets.
"""
from __future__ import annotations

import pandas as pd

from recipesearch.analysis.curve_speedup import CurveSpeedup
from recipesearch.analysis.points import N_BOOT
from recipesearch.analysis.speedup_bootstrap import bootstrap_curve_speedup, confirmed_faster

RECIPE_COLUMNS = ("recipe_key", "number", "algorithms", "n_budgets", "n_seeds", "speedup", "speedup_ci_low",
                  "speedup_ci_high", "speedup_status", "target_accuracy", "recipe_seconds", "baseline_seconds",
                  "recipe_unreached_fraction", "confirmed")  # fmt: skip


def curve_of(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs of one recipe (or of the baseline) that make its curve: its budgets with repeated seeds when two or
    more have them, else all. A lone proposal of the recipe at another budget (past a curve cut at the target) is
    not part of a curve trained with seeds: with it, the curve would count as a one-seed curve. (The baseline's
    one-seed runs, ``baseline.seeds_elsewhere``, are left out of a front point's interval this way.)"""
    seeds = runs.groupby("budget").size()
    return runs[runs["budget"].isin(seeds.index[seeds >= 2])] if (seeds >= 2).sum() >= 2 else runs


def recipe_curves(done: pd.DataFrame, baseline_runs: pd.DataFrame, metric: str, confidence: float,
                  target: float | None = None) -> pd.DataFrame:
    """Every recipe trained at two or more budgets: its curve against the baseline's (RECIPE_COLUMNS) at
    ``target`` (None: the higher accuracy both reach), confirmed first, then by speedup."""
    rows = []
    recipes = done[~done["is_baseline"]]
    if not baseline_runs.empty:
        for key, runs in recipes.groupby("recipe_key", sort=False):
            runs = curve_of(runs)
            if runs["budget"].nunique() < 2:
                continue
            r: CurveSpeedup = bootstrap_curve_speedup(runs, baseline_runs, target, n_boot=N_BOOT,
                                                      confidence=confidence, rng=0, acc_col=metric)
            first = runs.sort_values("number").iloc[0]
            rows.append({
                "recipe_key": key, "number": int(first["number"]), "algorithms": first["algorithms"],
                "n_budgets": int(runs["budget"].nunique()), "n_seeds": r.recipe_min_seeds,
                "speedup": r.speedup, "speedup_ci_low": r.ci_low, "speedup_ci_high": r.ci_high,
                "speedup_status": r.status, "target_accuracy": r.target_accuracy, "recipe_seconds": r.recipe_time,
                "baseline_seconds": r.baseline_time, "recipe_unreached_fraction": r.recipe_unreached_fraction,
                "confirmed": confirmed_faster(r),
            })  # fmt: skip
    table = pd.DataFrame(rows, columns=list(RECIPE_COLUMNS))
    if table.empty:
        return table
    table["confirmed"] = table["confirmed"].astype(bool)
    return table.sort_values(["confirmed", "speedup", "number"], ascending=[False, False, True],
                             na_position="last").reset_index(drop=True)
