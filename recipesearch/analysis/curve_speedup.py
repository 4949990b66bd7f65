"""Speedup of one tradeoff curve over another at a matched accuracy (MosaicML's methodology).

A recipe and the baseline are each trained at several budgets; the per-budget seed means give two
tradeoff curves of (train seconds, accuracy). Each curve is reduced to its envelope (best accuracy
reachable within time t, ``speedup.baseline_envelope``) and between envelope points accuracy is
linear in log(time), as in ``recipesearch.analysis.speedup``. Then, at a target accuracy,

    speedup = (baseline time to reach the target) / (recipe time to reach the target).

The default target is the highest accuracy both curves reach: the smaller of the two envelopes'
maxima. Comparing there uses the most of both curves without extrapolating either.

Statuses (strings, like ``speedup``'s, so they can go straight into tables):
- ``interpolated``: the target lies within both envelopes' accuracy ranges (ends included).
- ``recipe_ahead``: the target is below the recipe's shortest run's accuracy. The recipe's time is
  taken as that run's time, an upper bound on the time it needs, so the speedup is a lower bound
  (conservative; it can only understate the recipe).
- ``recipe_short``: the recipe's envelope never reaches the target: NaN (we do not extrapolate).
- ``beyond_baseline``: the baseline's envelope never reaches the target: NaN.
- ``below_baseline``: the target is below the baseline's shortest run's accuracy. The baseline might
  reach it much sooner than that run, so the ratio would only be an upper bound on the speedup: NaN.
- ``no_baseline`` / ``no_recipe``: a curve has no valid point (finite accuracy, finite time > 0);
  ``invalid``: the target is NaN.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from recipesearch.analysis.speedup import (
    BELOW_BASELINE,
    BEYOND_BASELINE,
    INTERPOLATED,
    INVALID,
    NO_BASELINE,
    TradeoffCurve,
    baseline_envelope,
    times_to_reach,
)

RECIPE_AHEAD = "recipe_ahead"
RECIPE_SHORT = "recipe_short"
NO_RECIPE = "no_recipe"

# Statuses whose speedup is a number; for every other status it is NaN.
FINITE_STATUSES = (INTERPOLATED, RECIPE_AHEAD)

_NAN = float("nan")


class CurveSpeedup(NamedTuple):
    """Speedup of a recipe's tradeoff curve over the baseline's at one target accuracy.

    ``curve_speedup`` fills the first five fields; ``bootstrap_curve_speedup`` fills the rest.
    """

    speedup: float  # baseline_time / recipe_time; NaN unless status is in FINITE_STATUSES
    target_accuracy: float
    baseline_time: float  # baseline envelope's time to reach the target; NaN when it does not
    recipe_time: float  # recipe envelope's time to reach the target (an upper bound when recipe_ahead)
    status: str
    ci_low: float = _NAN  # percentile bootstrap interval over the finite replicates
    ci_high: float = _NAN
    confidence: float = _NAN
    n_boot: int = 0  # replicates drawn
    n_finite: int = 0  # replicates with a finite speedup (those the interval is taken over)
    recipe_unreached_fraction: float = _NAN  # share of replicates where the recipe's curve fell short
    baseline_below_fraction: float = _NAN  # share where the baseline's shortest run already beat it
    recipe_min_seeds: int = 0  # fewest seeds behind any budget of the recipe's curve; 0 = not known
    baseline_min_seeds: int = 0


class SpeedupProfile(NamedTuple):
    """Speedup at each accuracy of a grid over the range both curves cover (for the report's plot)."""

    accuracies: np.ndarray
    speedups: np.ndarray
    baseline_times: np.ndarray
    recipe_times: np.ndarray


def default_target(recipe: TradeoffCurve, baseline: TradeoffCurve) -> float:
    """The highest accuracy both envelopes reach (NaN when either is empty)."""
    if len(recipe.accuracies) == 0 or len(baseline.accuracies) == 0:
        return _NAN
    return float(min(recipe.accuracies[-1], baseline.accuracies[-1]))


def _reach(target: float, curve: TradeoffCurve) -> tuple[float, str]:
    """Time for ``curve`` to reach ``target``, with ``speedup``'s status for that side.

    ``times_to_reach`` calls a target equal to the first point's accuracy "below"; that point's time
    is then exact, not a bound, so it is reported as interpolated. A target equal to the last point's but for
    the last bits of a float (a mean summed in another order) is reached there.
    """
    if len(curve.accuracies) and np.isclose(target, curve.accuracies[-1], rtol=1e-12, atol=0.0):
        target = float(curve.accuracies[-1])  # its own last mean (the baseline at budget 1), summed in another order
    times, statuses = times_to_reach([target], curve)
    time, status = float(times[0]), str(statuses[0])
    if status == BELOW_BASELINE and target == curve.accuracies[0]:
        status = INTERPOLATED
    return time, status


def curve_speedup(
    recipe_times: ArrayLike,
    recipe_accs: ArrayLike,
    base_times: ArrayLike,
    base_accs: ArrayLike,
    target: float | None = None,
) -> CurveSpeedup:
    """Speedup of the recipe's tradeoff curve over the baseline's at ``target`` (see the module doc).

    Each pair of arrays is one point per budget, normally the seed means from ``curve_by_budget``.
    ``target`` defaults to the highest accuracy both curves reach.
    """
    recipe = baseline_envelope(recipe_times, recipe_accs)
    baseline = baseline_envelope(base_times, base_accs)
    if target is None:
        target = default_target(recipe, baseline)
    target = float(target)
    if len(baseline.times) == 0:
        return CurveSpeedup(_NAN, target, _NAN, _NAN, NO_BASELINE)
    if len(recipe.times) == 0:
        return CurveSpeedup(_NAN, target, _NAN, _NAN, NO_RECIPE)
    if np.isnan(target):
        return CurveSpeedup(_NAN, target, _NAN, _NAN, INVALID)

    base_time, base_side = _reach(target, baseline)
    recipe_time, recipe_side = _reach(target, recipe)
    # The recipe falling short is named first: it is the outcome the bootstrap counts.
    if recipe_side == BEYOND_BASELINE:
        status = RECIPE_SHORT
    elif base_side in (BEYOND_BASELINE, BELOW_BASELINE):
        status = base_side
    elif recipe_side == BELOW_BASELINE:
        status = RECIPE_AHEAD
    else:
        status = INTERPOLATED
    if base_side != INTERPOLATED:
        base_time = _NAN  # beyond: unknown; below: only an upper bound, not a time we state
    speedup = base_time / recipe_time if status in FINITE_STATUSES else _NAN
    return CurveSpeedup(speedup, target, base_time, recipe_time, status)


def speedup_profile(
    recipe_times: ArrayLike,
    recipe_accs: ArrayLike,
    base_times: ArrayLike,
    base_accs: ArrayLike,
    n_points: int = 25,
) -> SpeedupProfile:
    """Speedups on ``n_points`` evenly spaced accuracies where both envelopes overlap.

    The grid runs from the higher of the two curves' lowest accuracies to the lower of their highest,
    so every point is interpolated on both curves (status ``interpolated``). Empty arrays when the
    curves' accuracy ranges do not overlap.
    """
    if n_points < 1:
        raise ValueError(f"n_points must be at least 1, got {n_points}")
    recipe = baseline_envelope(recipe_times, recipe_accs)
    baseline = baseline_envelope(base_times, base_accs)
    empty = np.empty(0)
    if len(recipe.times) == 0 or len(baseline.times) == 0:
        return SpeedupProfile(empty, empty, empty, empty)
    low = max(recipe.accuracies[0], baseline.accuracies[0])
    high = min(recipe.accuracies[-1], baseline.accuracies[-1])
    if low > high:
        return SpeedupProfile(empty, empty, empty, empty)
    grid = np.linspace(low, high, n_points) if high > low else np.array([low])
    base_t, _ = times_to_reach(grid, baseline)
    recipe_t, _ = times_to_reach(grid, recipe)
    return SpeedupProfile(grid, base_t / recipe_t, base_t, recipe_t)
