"""The headline of a search: the one speedup claim the CLI, the live table and the report lead with.

In order of preference: the confirmed-faster recipe curve with the largest speedup, with its interval
(``analysis.recipe_curves``); else the confirmed front point with the largest speedup (a claim at that
point's accuracy, ``analysis.points``); else nothing: ``number`` is None and ``verdict`` says so
("nothing beat the baseline"). Next to it, the largest single-point speedup measured on the front.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from recipesearch.analysis.speedup import INTERPOLATED, TradeoffCurve
from recipesearch.analysis.text import interval_text
from recipesearch.trials_columns import TIME, VAL_ACCURACY


@dataclass(frozen=True)
class Headline:
    """The headline: the confirmed-faster recipe curve with the largest speedup (NaN / None when there is
    none), plus the largest single-point speedup measured on the front. All on the frontier's metric."""

    baseline_accuracy: float  # the accuracy the curves are compared at (target)
    baseline_seconds: float  # baseline curve's time to reach it
    baseline_budget: float  # budget of the baseline's longest run
    number: int | None  # the confirmed recipe (its proposal's trial number); None: nothing confirmed
    algorithms: str
    recipe_seconds: float  # the recipe curve's time to reach the target
    recipe_accuracy: float  # = the target
    speedup: float  # baseline_seconds / recipe_seconds
    accuracy_gain: float  # best point metric within baseline_seconds - target
    gain_number: int | None
    front_speedup: float = float("nan")  # the largest interpolated point speedup on the front
    front_number: int | None = None
    front_algorithms: str = ""
    front_accuracy: float = float("nan")
    front_seconds: float = float("nan")
    recipe_budget: float = float("nan")  # NaN: a curve over budgets, not one budget
    front_budget: float = float("nan")
    speedup_ci_low: float = float("nan")
    speedup_ci_high: float = float("nan")
    confirmed: bool = False
    n_seeds: int = 0  # fewest seeds behind any budget of the recipe's curve
    n_budgets: int = 0
    verdict: str = ""  # one line for the CLI and the report


def largest_front_speedup(front: pd.DataFrame, metric: str) -> pd.Series | None:
    """The non-baseline front row with the largest measured (interpolated) speedup; ties: higher metric,
    then lower trial number. None when no front recipe has one (below-the-curve bounds do not count)."""
    if front.empty:
        return None
    speedup = pd.to_numeric(front["speedup"], errors="coerce").astype(float)
    measured = front[~front["is_baseline"].astype(bool) & (front["speedup_status"] == INTERPOLATED)
                     & np.isfinite(speedup)]
    if measured.empty:
        return None
    return measured.sort_values(["speedup", metric, "number"], ascending=[False, False, True]).iloc[0]


def choose_headline(points: pd.DataFrame, front: pd.DataFrame, recipes: pd.DataFrame, baseline: pd.DataFrame,
                    curve: TradeoffCurve, metric: str) -> Headline:
    """In order: the confirmed recipe curve with the largest speedup (at the highest accuracy both curves
    reach); else the confirmed front point with the largest speedup (a claim at that point's accuracy);
    else nothing (``number`` None)."""
    nan = float("nan")
    budget = float(baseline["budget"].max()) if len(baseline) else nan
    fields: dict[str, Any] = {}
    top = largest_front_speedup(front, metric)
    if top is not None:
        fields = {"front_speedup": float(top["speedup"]), "front_number": int(top["number"]),
                  "front_algorithms": str(top["algorithms"]), "front_accuracy": float(top[metric]),
                  "front_seconds": float(top[TIME]), "front_budget": float(top["budget"])}
    confirmed = recipes[recipes["confirmed"]] if len(recipes) else recipes
    good_points = front[front["confirmed"].astype(bool)] if len(front) else front
    if len(confirmed):
        r = confirmed.iloc[0]
        target, base_s = float(r["target_accuracy"]), float(r["baseline_seconds"])
        gain, gain_number = _gain(points, base_s, target, metric)
        h = Headline(target, base_s, budget, int(r["number"]), str(r["algorithms"]), float(r["recipe_seconds"]),
                     target, float(r["speedup"]), gain, gain_number, speedup_ci_low=float(r["speedup_ci_low"]),
                     speedup_ci_high=float(r["speedup_ci_high"]), confirmed=True, n_seeds=int(r["n_seeds"]),
                     n_budgets=int(r["n_budgets"]), **fields)  # fmt: skip
    elif len(good_points):
        p = good_points.sort_values(["speedup", metric, "number"], ascending=[False, False, True]).iloc[0]
        target, base_s = float(p[metric]), float(p["baseline_seconds"])
        gain, gain_number = _gain(points, base_s, target, metric)
        h = Headline(target, base_s, budget, int(p["number"]), str(p["algorithms"]), float(p[TIME]), target,
                     float(p["speedup"]), gain, gain_number, recipe_budget=float(p["budget"]),
                     speedup_ci_low=float(p["speedup_ci_low"]), speedup_ci_high=float(p["speedup_ci_high"]),
                     confirmed=True, n_seeds=int(p["n_seeds"]), n_budgets=1, **fields)  # fmt: skip
    else:
        target = float(curve.accuracies.max()) if len(curve.accuracies) else nan
        base_s = float(curve.times[int(np.argmax(curve.accuracies))]) if len(curve.accuracies) else nan
        gain, gain_number = _gain(points, base_s, target, metric)
        h = Headline(target, base_s, budget, None, "", nan, nan, nan, gain, gain_number, **fields)
    return _with_verdict(h, recipes, curve, metric)


def _gain(points: pd.DataFrame, within_seconds: float, target: float, metric: str) -> tuple[float, int | None]:
    """The best non-baseline point metric within ``within_seconds``, minus ``target``."""
    if not (math.isfinite(within_seconds) and math.isfinite(target)) or points.empty:
        return float("nan"), None
    cand = points[~points["is_baseline"] & points["eligible"] & (points[TIME] <= within_seconds)]
    if cand.empty:
        return float("nan"), None
    best = cand.sort_values([metric, TIME, "number"], ascending=[False, True, True]).iloc[0]
    return float(best[metric]) - target, int(best["number"])


def _label(metric: str) -> str:
    return "val acc" if metric == VAL_ACCURACY else "test acc"


def _with_verdict(h: Headline, recipes: pd.DataFrame, curve: TradeoffCurve, metric: str) -> Headline:
    """``h`` with its one-line ``verdict``: what is confirmed, or why nothing is."""
    best_curve = ""
    repeated = recipes[recipes["n_seeds"] >= 2] if len(recipes) else recipes
    if len(recipes):
        r = (repeated if len(repeated) else recipes).iloc[0]
        interval = interval_text(r["speedup_ci_low"], r["speedup_ci_high"]) if int(r["n_seeds"]) >= 2 \
            else " (one seed)"
        best_curve = (f"trial {int(r['number'])}, {float(r['speedup']):.2f}x{interval}"
                      if math.isfinite(float(r["speedup"])) else f"trial {int(r['number'])}, {r['speedup_status']}")
    if h.confirmed and h.n_budgets >= 2:
        text = (f"confirmed: trial {h.number} ({h.algorithms or 'no algorithms'}) is {h.speedup:.2f}x faster"
                f"{interval_text(h.speedup_ci_low, h.speedup_ci_high)} than the baseline at {_label(metric)} "
                f"{h.baseline_accuracy:.4f} ({h.recipe_seconds:.2f} s vs {h.baseline_seconds:.2f} s; curves over "
                f"{h.n_budgets} budgets, {h.n_seeds}+ seeds each)")
    elif h.confirmed:
        best = float(curve.accuracies.max()) if len(curve.accuracies) else float("nan")
        text = (f"confirmed at {_label(metric)} {h.baseline_accuracy:.4f}: trial {h.number} "
                f"({h.algorithms or 'no algorithms'}, budget {h.recipe_budget:g}) is {h.speedup:.2f}x faster"
                f"{interval_text(h.speedup_ci_low, h.speedup_ci_high)} than the baseline ({h.recipe_seconds:.2f} s "
                f"vs {h.baseline_seconds:.2f} s, {h.n_seeds} seeds); at the baseline's best {best:.4f} no recipe "
                f"curve is confirmed faster" + (f" (best: {best_curve})" if best_curve else ""))
    elif len(repeated):
        text = (f"nothing beat the baseline: no recipe is faster beyond seed noise ({len(repeated)} recipe "
                f"curve(s) with repeated seeds; best: {best_curve})")
    else:
        text = "not confirmed: no recipe was trained at two or more budgets with repeated seeds" + (
            f" (best single-seed curve: {best_curve})" if best_curve else "")
    return replace(h, verdict=text)
