"""Sequential confirmation: a claim gets one more seed only while its interval straddles the decision.

The confirmation stage trains each candidate (and the paired baseline) with ``confirm.seeds`` seeds, then looks:
a candidate whose curve speedup to the target is confirmed (the 95 % interval's lower bound above 1:
``confirmed_faster``) or futile (its upper bound below 1, or no replicate measures a speedup) is settled; one still
straddling gets one more seed at each budget of its curve (or, for a curve with a seed short of the target at its
top budget or too many replicates short of it, ``falls_short``, the next budget with the confirmation's seeds), and
the second look decides it (``confirm.sequential``). The
baseline gets no extra seed: its curve, and the target measured on it, stay those of the first look, so a candidate
settled there keeps the verdict the report computes.

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


def falls_short(result: CurveSpeedup) -> bool:
    """More of the recipe's bootstrap replicates fall short of the target than ``confirmed_faster`` lets a claim
    miss: whatever its time, the claim cannot stand on these budgets. A seed more at each barely moves that share
    (digits, benchmarks §13: a curve whose 3 seeds at budget 0.5 all passed the target by 0.3-2.2 points had 9.9 %
    of its replicates short, 3.1 % with a 4th seed, and stayed open); the next budget's runs reach the target."""
    return result.recipe_unreached_fraction > (1 - result.confidence) / 2


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
