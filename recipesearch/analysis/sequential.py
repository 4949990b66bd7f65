"""Sequential confirmation: a claim gets one more seed only while its interval straddles the decision.

The confirmation stage trains each candidate (and the paired baseline) with ``confirm.seeds`` seeds, then looks:
a candidate whose curve speedup to the target is confirmed (the 95 % interval's lower bound above 1:
``confirmed_faster``) or futile (its upper bound below 1, or no replicate measures a speedup) is settled; one still
straddling gets one more seed at each budget of its curve (or, for a curve with a seed short of the target at its
top budget or too many replicates short of it, ``next_budget_needed``, the next budget with the confirmation's
seeds), and the second look decides it (``confirm.sequential``). The baseline gets no extra seed: its curve, and
the target measured on it, stay those of the first look, so a candidate settled there keeps the verdict the report
computes.

The false-confirmation rate survives the optional stopping by an alpha-spending bound: each look's rule is the
fixed-sample one, whose lower bound wrongly clears 1 with probability at most 2.5 % (one tail of a 95 % interval),
so over at most two looks a recipe no faster than the baseline is confirmed with probability at most 5 %
(``MAX_LOOKS`` x 2.5 %, the union bound; the looks are correlated, so the true rate is lower). A third look would
need a narrower per-look level, hence the limit. ``bench/sequential_confirmation.py`` measures the rate with null
recipes: the baseline's own runs relabelled as a candidate.

"""
from __future__ import annotations

import numpy as np
import pandas as pd

from recipesearch.analysis.curve_speedup import CurveSpeedup
from recipesearch.analysis.points import N_BOOT
from recipesearch.analysis.recipe_curves import curve_of
from recipesearch.analysis.seeds import t_half_width
from recipesearch.analysis.speedup_bootstrap import bootstrap_curve_speedup, confirmed_faster

CONFIRMED, FUTILE, OPEN = "confirmed", "futile", "open"
MAX_LOOKS = 2  # x 2.5 % per look (the lower tail of a 95 % interval) = the 5 % false-confirmation budget


def decide(result: CurveSpeedup) -> str:
    """CONFIRMED, FUTILE or OPEN for one look's bootstrap result (module docstring)."""
    if confirmed_faster(result):
        return CONFIRMED
    if result.n_boot and (result.n_finite == 0 or (np.isfinite(result.ci_high) and result.ci_high < 1.0)):
        return FUTILE
    return OPEN


def next_budget_needed(result: CurveSpeedup, top: np.ndarray, target: float) -> bool:
    """Whether an open curve's second look trains the next budget rather than a seed more at each of its budgets:
    a seed at its top budget short of the target, or more of its bootstrap replicates short of it than a claim may
    miss (``confirmed_faster``) and more than a seed more would leave at the mean and spread its seeds there show.

    A seed more shrinks the share short only slowly: on 3 seeds the replicates' means spread about the mean as
    Student's t(2) over sqrt(3), on 4 as t(3) over 2, so the share falls below the lower tail's (2.5 %) only where
    (mean - target) / spread >= t(n) / sqrt(n + 1), 1.59 for a 4th seed. Measured on digits (benchmarks §13): trial
    11 of seed 1, its 3 seeds at budget 0.5 all past the target (1.22 spreads above it on average), had 9.9 % of its
    replicates short and 3.1 % with a 4th seed, and stayed open; trial 14 of seed 2 (1.67 spreads above it) was
    confirmed by its 4th seed, where the next budget would have cost 4 times as much."""
    top = np.asarray(top, dtype=float)
    if (top < target).any():
        return True
    if result.recipe_unreached_fraction <= (1 - result.confidence) / 2 or len(top) < 2:
        return False
    # t(n) / sqrt(n + 1) spreads: the half-width of the t interval that one seed more would give
    fourth = float(t_half_width(np.std(top, ddof=1), len(top) + 1, result.confidence))
    return float(top.mean()) - target < fourth


def measure(recipe_runs: pd.DataFrame, base_runs: pd.DataFrame, target: float | None, metric: str,
            confidence: float = 0.95) -> CurveSpeedup:
    """A candidate's curve against the baseline's to ``target``, measured as ``recipe_curves`` measures it (the same
    bootstrap, replicates and seed)."""
    return bootstrap_curve_speedup(curve_of(recipe_runs), base_runs, target, n_boot=N_BOOT, confidence=confidence,
                                   rng=0, acc_col=metric)


def look(recipe_runs: pd.DataFrame, base_runs: pd.DataFrame, target: float | None, metric: str,
         confidence: float = 0.95) -> str:
    """One look at a candidate: ``measure``, decided as ``recipe_curves`` decides it."""
    return decide(measure(recipe_runs, base_runs, target, metric, confidence))
