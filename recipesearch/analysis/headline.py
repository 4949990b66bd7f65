"""The headline of a search: the one speedup claim the CLI, the live table and the report lead with.

It is a claim at the search's target accuracy (``analysis.target``: by default what the baseline gets at budget
1): the confirmed-faster recipe curve with the largest speedup to the target, with its interval
(``analysis.recipe_curves`` measures every curve there); else nothing: ``number`` is None and ``verdict`` says
why (nothing beat the baseline there, the baseline never reached the target, ...). A speedup at another
accuracy, however large, is never the headline: the largest point speedup on the front is the ``elsewhere``
line beside it, labelled with its own accuracy and whether it is confirmed there.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from recipesearch.analysis.speedup import INTERPOLATED, TradeoffCurve, times_to_reach
from recipesearch.analysis.target import Target
from recipesearch.analysis.text import interval_text
from recipesearch.trials_columns import TIME, VAL_ACCURACY


@dataclass(frozen=True)
class Headline:
    """The headline: the confirmed-faster recipe curve with the largest speedup to the target (NaN / None when
    there is none), plus the largest single-point speedup measured on the front. All on the frontier's metric."""

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
    front_budget: float = float("nan")
    speedup_ci_low: float = float("nan")
    speedup_ci_high: float = float("nan")
    confirmed: bool = False
    n_seeds: int = 0  # fewest seeds behind any budget of the recipe's curve
    n_budgets: int = 0
    verdict: str = ""  # one line for the CLI and the report: the claim at the target
    target_source: str = ""  # where the target comes from: "the baseline at budget 1" (analysis.target)
    elsewhere: str = ""  # the largest point speedup on the front, labelled with its own accuracy (never the headline)


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
                    curve: TradeoffCurve, metric: str, target: Target) -> Headline:
    """The confirmed recipe curve with the largest speedup to ``target`` (``recipes`` are measured there), else
    nothing (``number`` None); beside it, the largest point speedup on the front at its own accuracy."""
    nan = float("nan")
    budget = float(baseline["budget"].max()) if len(baseline) else nan
    fields: dict[str, Any] = {"target_source": target.source}
    top = largest_front_speedup(front, metric)
    if top is not None:
        fields.update(front_speedup=float(top["speedup"]), front_number=int(top["number"]),
                      front_algorithms=str(top["algorithms"]), front_accuracy=float(top[metric]),
                      front_seconds=float(top[TIME]), front_budget=float(top["budget"]))
    confirmed = recipes[recipes["confirmed"]] if len(recipes) else recipes
    if len(confirmed):
        r = confirmed.iloc[0]
        base_s = float(r["baseline_seconds"])
        gain, gain_number = _gain(points, base_s, target.accuracy, metric)
        h = Headline(target.accuracy, base_s, budget, int(r["number"]), str(r["algorithms"]),
                     float(r["recipe_seconds"]), target.accuracy, float(r["speedup"]), gain, gain_number,
                     speedup_ci_low=float(r["speedup_ci_low"]), speedup_ci_high=float(r["speedup_ci_high"]),
                     confirmed=True, n_seeds=int(r["n_seeds"]), n_budgets=int(r["n_budgets"]), **fields)
    else:
        times, _ = times_to_reach([target.accuracy], curve)
        base_s = float(times[0])
        gain, gain_number = _gain(points, base_s, target.accuracy, metric)
        h = Headline(target.accuracy, base_s, budget, None, "", nan, nan, nan, gain, gain_number, **fields)
    return _with_verdict(h, recipes, curve, metric, top)


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


def _with_verdict(h: Headline, recipes: pd.DataFrame, curve: TradeoffCurve, metric: str,
                  top: pd.Series | None) -> Headline:
    """``h`` with its one-line ``verdict`` at the target (what is confirmed there, or why nothing is) and the
    ``elsewhere`` line (the largest speedup on the front, at its own accuracy)."""
    at = f"to the target {_label(metric)} {h.baseline_accuracy:.4f} ({h.target_source})"
    best_curve = ""
    repeated = recipes[recipes["n_seeds"] >= 2] if len(recipes) else recipes
    if len(recipes):
        r = (repeated if len(repeated) else recipes).iloc[0]
        interval = interval_text(r["speedup_ci_low"], r["speedup_ci_high"]) if int(r["n_seeds"]) >= 2 \
            else " (one seed)"
        status = str(r["speedup_status"])
        best_curve = (f"trial {int(r['number'])}, {float(r['speedup']):.2f}x{interval}"
                      if math.isfinite(float(r["speedup"])) else
                      f"trial {int(r['number'])}, {_STATUS_WORDS.get(status, status)}")
    best_base = float(curve.accuracies.max()) if len(curve.accuracies) else float("nan")
    first_base = float(curve.accuracies[0]) if len(curve.accuracies) else float("nan")
    if h.confirmed:
        text = (f"confirmed: trial {h.number} ({h.algorithms or 'no algorithms'}) is {h.speedup:.2f}x faster"
                f"{interval_text(h.speedup_ci_low, h.speedup_ci_high)} than the baseline {at}: "
                f"{h.recipe_seconds:.2f} s vs {h.baseline_seconds:.2f} s (curves over {h.n_budgets} budgets, "
                f"{h.n_seeds}+ seeds each)")
    elif not len(recipes) or not math.isfinite(h.baseline_accuracy):
        text = "not confirmed: no recipe was trained at two or more budgets with repeated seeds" + (
            f" (best single-seed curve: {best_curve})" if best_curve else "")
    elif h.baseline_accuracy > best_base:
        text = (f"not confirmed {at}: the baseline never reached it (its best: {best_base:.4f}), so no speedup "
                "can be measured there")
    elif h.baseline_accuracy < first_base:
        text = (f"not confirmed {at}: the baseline's shortest run already reaches it ({first_base:.4f}); train "
                "the baseline at a smaller budget to measure a speedup there")
    elif len(repeated):
        text = (f"nothing beat the baseline {at}: no recipe reaches it faster beyond seed noise ({len(repeated)} "
                f"recipe curve(s) with repeated seeds; best: {best_curve})")
    else:
        text = "not confirmed: no recipe was trained at two or more budgets with repeated seeds" + (
            f" (best single-seed curve: {best_curve})" if best_curve else "")
    return replace(h, verdict=text, elsewhere=_elsewhere(h, top, metric))


# A recipe curve's status where it has no speedup, in the verdict's words.
_STATUS_WORDS = {"recipe_short": "never reaches the target", "beyond_baseline": "beyond the baseline",
                 "below_baseline": "below the baseline's shortest run"}


def _elsewhere(h: Headline, top: pd.Series | None, metric: str) -> str:
    """'elsewhere on the front: trial 41 (mixup, budget 0.25, 3 seeds) is 2.25x faster [95% CI 1.59-3.79] at val acc
    0.9100, confirmed there': the largest point speedup, labelled with its own accuracy; '' when there is none. The
    one wording of the CLI, the report command and run.json (the first two add the held-out test figure after it,
    ``Frontier.elsewhere_text``: never here, where nothing may depend on test)."""
    if top is None:
        return ""
    seeds = int(top["n_seeds"]) if "n_seeds" in top and math.isfinite(float(top["n_seeds"])) else 1
    interval = interval_text(top.get("speedup_ci_low"), top.get("speedup_ci_high")) if seeds >= 2 else ""
    verdict = ("confirmed there" if bool(top.get("confirmed", False)) else
               "one seed: not confirmed" if seeds < 2 else "not confirmed (the interval reaches 1 or a bootstrap "
               "replicate has no speedup)" if not (float(top.get("speedup_ci_low", float("nan"))) > 1)
               else "not confirmed (too few bootstrap replicates measure a speedup)")
    return (f"elsewhere on the front: trial {h.front_number} ({h.front_algorithms or 'no algorithms'}, budget "
            f"{h.front_budget:g}, {seeds} seed{'s' if seeds != 1 else ''}) is {h.front_speedup:.2f}x faster{interval} "
            f"at {_label(metric)} {h.front_accuracy:.4f}, {verdict}")
