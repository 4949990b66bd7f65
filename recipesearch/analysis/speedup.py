"""Speedup at matched accuracy against the baseline's tradeoff curve (MosaicML's methodology).

The baseline is trained at several budgets, giving (time, accuracy) points. ``baseline_envelope``
turns them into the best accuracy reachable within time t (running max over time), and between
envelope points accuracy is interpolated linearly against log(time): accuracy grows roughly
linearly as the budget doubles, so this is the curve's natural shape (Blalock et al., "Composer",
and MosaicML's "Methodology" blog post). Speedup of a recipe = time the baseline needs to reach the
recipe's accuracy / the recipe's time.

Statuses (strings, so they can go straight into trials tables):
- ``interpolated``: the accuracy (or time) lies within the baseline's curve.
- ``below_baseline``: the recipe's accuracy is at or below the shortest baseline run's. The speedup
  is computed against that shortest run's time: the baseline would need at most that time to reach
  such a low accuracy, so the reported speedup is an upper bound (the report prints it as "≤"), not
  an extrapolation.
  For matched time it means the recipe trained for less time than the shortest baseline run; it is
  compared with that run's accuracy, which the baseline would not reach that fast (also conservative).
- ``beyond_baseline``: the recipe is more accurate than any baseline run; the baseline's time is
  unknown, so the speedup is NaN (we do not extrapolate). For matched time: the recipe trained longer
  than the longest baseline run and is compared with the baseline's best accuracy (not conservative:
  a longer baseline run might do better).
- ``no_baseline``: no valid baseline point; ``invalid``: the recipe's value is NaN or time <= 0.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

INTERPOLATED = "interpolated"
BELOW_BASELINE = "below_baseline"
BEYOND_BASELINE = "beyond_baseline"
NO_BASELINE = "no_baseline"
INVALID = "invalid"


class TradeoffCurve(NamedTuple):
    """Baseline envelope: times strictly increasing, accuracies strictly increasing."""

    times: np.ndarray
    accuracies: np.ndarray


class SpeedupResult(NamedTuple):
    speedup: float  # baseline_time / recipe_time; NaN when beyond the baseline or invalid
    baseline_time: float  # time the baseline needs to reach the recipe's accuracy
    status: str


class SpeedupArrays(NamedTuple):
    speedup: np.ndarray
    baseline_time: np.ndarray
    status: np.ndarray  # object array of status strings


class AccuracyGain(NamedTuple):
    gain: float  # recipe accuracy - baseline accuracy at the recipe's time
    baseline_accuracy: float
    status: str


class AccuracyGainArrays(NamedTuple):
    gain: np.ndarray
    baseline_accuracy: np.ndarray
    status: np.ndarray


class HeadlineSpeedup(NamedTuple):
    """The fastest trial reaching the baseline's final (longest-run) accuracy, and its speedup."""

    target_accuracy: float  # accuracy of the longest baseline run
    baseline_time: float  # earliest time on the baseline envelope reaching the target
    index: int | None  # row of the winning recipe in the arrays passed in; None when none reaches it
    recipe_time: float
    recipe_accuracy: float
    speedup: float


def baseline_envelope(times: ArrayLike, accs: ArrayLike) -> TradeoffCurve:
    """Best accuracy reachable within time t: sort by time, keep only points that improve on all faster ones.

    A longer baseline run that is *less* accurate than a shorter one (noise, overfitting) is dropped:
    the baseline can always stop at the shorter budget. Points with NaN, infinite or non-positive time
    (log time is undefined) or NaN accuracy are ignored.
    """
    t = np.asarray(times, dtype=float).reshape(-1)
    a = np.asarray(accs, dtype=float).reshape(-1)
    if t.shape != a.shape:
        raise ValueError(f"times and accs differ in length: {t.shape} vs {a.shape}")
    ok = np.isfinite(t) & (t > 0) & np.isfinite(a)
    t, a = t[ok], a[ok]
    order = np.lexsort((-a, t))  # by time, the most accurate first among equal times
    t, a = t[order], a[order]
    previous_best = np.concatenate([[-np.inf], np.maximum.accumulate(a)[:-1]])
    keep = a > previous_best
    return TradeoffCurve(t[keep], a[keep])


def _as_curve(curve: TradeoffCurve | tuple[ArrayLike, ArrayLike]) -> TradeoffCurve:
    # The envelope is idempotent, so re-applying it makes raw (times, accs) pairs safe to pass too.
    return baseline_envelope(*curve)


def _segment(x: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """Index i of the segment [xs[i-1], xs[i]] holding each x (x within [xs[0], xs[-1]], len(xs) >= 2)."""
    return np.clip(np.searchsorted(xs, x, side="left"), 1, len(xs) - 1)


def _time_at_accuracy(a: np.ndarray, c: TradeoffCurve) -> np.ndarray:
    """log(time) linear in accuracy between consecutive envelope points."""
    i = _segment(a, c.accuracies)
    a0, a1 = c.accuracies[i - 1], c.accuracies[i]
    lt0, lt1 = np.log(c.times[i - 1]), np.log(c.times[i])
    return np.exp(lt0 + (a - a0) / (a1 - a0) * (lt1 - lt0))


def _accuracy_at_time(t: np.ndarray, c: TradeoffCurve) -> np.ndarray:
    """Accuracy linear in log(time) between consecutive envelope points."""
    i = _segment(t, c.times)
    lt0, lt1 = np.log(c.times[i - 1]), np.log(c.times[i])
    a0, a1 = c.accuracies[i - 1], c.accuracies[i]
    return a0 + (np.log(t) - lt0) / (lt1 - lt0) * (a1 - a0)


def times_to_reach(
    accs: ArrayLike, curve: TradeoffCurve | tuple[ArrayLike, ArrayLike]
) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised ``time_to_reach``: (baseline times, status strings) for an array of accuracies."""
    c = _as_curve(curve)
    a = np.atleast_1d(np.asarray(accs, dtype=float))
    out = np.full(a.shape, np.nan)
    status = np.full(a.shape, INTERPOLATED, dtype=object)
    if len(c.times) == 0:
        status[:] = NO_BASELINE
        return out, status
    with np.errstate(invalid="ignore"):
        invalid = np.isnan(a)
        below = ~invalid & (a <= c.accuracies[0])
        beyond = ~invalid & (a > c.accuracies[-1])
    mid = ~(invalid | below | beyond)
    status[invalid], status[below], status[beyond] = INVALID, BELOW_BASELINE, BEYOND_BASELINE
    out[below] = c.times[0]
    if mid.any():  # implies at least two envelope points
        out[mid] = _time_at_accuracy(a[mid], c)
    return out, status


def time_to_reach(acc: float, curve: TradeoffCurve | tuple[ArrayLike, ArrayLike]) -> tuple[float, str]:
    """Time the baseline needs to reach ``acc`` and how that was obtained (see the module's statuses)."""
    t, s = times_to_reach([acc], curve)
    return float(t[0]), str(s[0])


def speedups_at_matched_accuracy(
    recipe_times: ArrayLike, recipe_accs: ArrayLike, baseline_times: ArrayLike, baseline_accs: ArrayLike
) -> SpeedupArrays:
    """Vectorised ``speedup_at_matched_accuracy`` over arrays of recipes."""
    rt = np.atleast_1d(np.asarray(recipe_times, dtype=float))
    ra = np.atleast_1d(np.asarray(recipe_accs, dtype=float))
    if rt.shape != ra.shape:
        raise ValueError(f"recipe_times and recipe_accs differ in shape: {rt.shape} vs {ra.shape}")
    bt, status = times_to_reach(ra, baseline_envelope(baseline_times, baseline_accs))
    with np.errstate(invalid="ignore"):
        bad_time = ~(np.isfinite(rt) & (rt > 0))
    status[bad_time & (status != NO_BASELINE)] = INVALID
    speedup = np.full(rt.shape, np.nan)
    ok = (status == INTERPOLATED) | (status == BELOW_BASELINE)
    speedup[ok] = bt[ok] / rt[ok]
    return SpeedupArrays(speedup, bt, status)


def speedup_at_matched_accuracy(
    recipe_time: float, recipe_acc: float, baseline_times: ArrayLike, baseline_accs: ArrayLike
) -> SpeedupResult:
    """Speedup of one recipe: baseline time to reach its accuracy / its time (NaN beyond the baseline)."""
    s = speedups_at_matched_accuracy([recipe_time], [recipe_acc], baseline_times, baseline_accs)
    return SpeedupResult(float(s.speedup[0]), float(s.baseline_time[0]), str(s.status[0]))


def accuracy_gains_at_matched_time(
    recipe_times: ArrayLike, recipe_accs: ArrayLike, baseline_times: ArrayLike, baseline_accs: ArrayLike
) -> AccuracyGainArrays:
    """Vectorised ``accuracy_at_matched_time``."""
    c = baseline_envelope(baseline_times, baseline_accs)
    rt = np.atleast_1d(np.asarray(recipe_times, dtype=float))
    ra = np.atleast_1d(np.asarray(recipe_accs, dtype=float))
    if rt.shape != ra.shape:
        raise ValueError(f"recipe_times and recipe_accs differ in shape: {rt.shape} vs {ra.shape}")
    base = np.full(rt.shape, np.nan)
    status = np.full(rt.shape, INTERPOLATED, dtype=object)
    if len(c.times) == 0:
        status[:] = NO_BASELINE
        return AccuracyGainArrays(base.copy(), base, status)
    with np.errstate(invalid="ignore"):
        invalid = ~(np.isfinite(rt) & (rt > 0)) | np.isnan(ra)
        below = ~invalid & (rt < c.times[0])
        beyond = ~invalid & (rt > c.times[-1])
    mid = ~(invalid | below | beyond)
    status[invalid], status[below], status[beyond] = INVALID, BELOW_BASELINE, BEYOND_BASELINE
    base[below], base[beyond] = c.accuracies[0], c.accuracies[-1]
    if len(c.times) == 1:
        base[mid] = c.accuracies[0]  # mid means exactly the single baseline time
    elif mid.any():
        base[mid] = _accuracy_at_time(rt[mid], c)
    return AccuracyGainArrays(ra - base, base, status)


def accuracy_at_matched_time(
    recipe_time: float, recipe_acc: float, baseline_times: ArrayLike, baseline_accs: ArrayLike
) -> AccuracyGain:
    """Accuracy gained at the recipe's time: its accuracy minus the baseline's (interpolated in log time)."""
    g = accuracy_gains_at_matched_time([recipe_time], [recipe_acc], baseline_times, baseline_accs)
    return AccuracyGain(float(g.gain[0]), float(g.baseline_accuracy[0]), str(g.status[0]))


def final_baseline_accuracy(baseline_times: ArrayLike, baseline_accs: ArrayLike) -> float:
    """Accuracy of the longest baseline run (the most accurate among equally long runs); NaN when none.

    The accuracy MosaicML state speedups at: the baseline trained for its full budget.
    """
    bt = np.asarray(baseline_times, dtype=float).reshape(-1)
    ba = np.asarray(baseline_accs, dtype=float).reshape(-1)
    ok = np.flatnonzero(np.isfinite(bt) & (bt > 0) & np.isfinite(ba))
    if len(ok) == 0:
        return float("nan")
    return float(ba[ok[np.lexsort((-ba[ok], -bt[ok]))[0]]])


def best_speedup_at_baseline_accuracy(
    recipe_times: ArrayLike,
    recipe_accs: ArrayLike,
    baseline_times: ArrayLike,
    baseline_accs: ArrayLike,
    target_accuracy: float | None = None,
) -> HeadlineSpeedup:
    """The headline number: the fastest recipe reaching the baseline's final accuracy, and its speedup.

    The target is ``final_baseline_accuracy`` unless ``target_accuracy`` is given. The baseline's time is
    the earliest time its envelope reaches the target, so a noisy longest run never inflates the speedup.
    Ties between equally fast recipes go to the more accurate one, then to the lower index. Pass the
    candidate trials (usually the completed non-baseline ones); the index refers to their order.
    """
    nan = float("nan")
    bt = np.asarray(baseline_times, dtype=float).reshape(-1)
    ba = np.asarray(baseline_accs, dtype=float).reshape(-1)
    if target_accuracy is None:
        target_accuracy = final_baseline_accuracy(bt, ba)
        if np.isnan(target_accuracy):
            return HeadlineSpeedup(nan, nan, None, nan, nan, nan)
    baseline_time, _ = time_to_reach(target_accuracy, (bt, ba))
    rt = np.atleast_1d(np.asarray(recipe_times, dtype=float))
    ra = np.atleast_1d(np.asarray(recipe_accs, dtype=float))
    with np.errstate(invalid="ignore"):
        reach = np.flatnonzero(np.isfinite(rt) & (rt > 0) & (ra >= target_accuracy))
    if len(reach) == 0:
        return HeadlineSpeedup(target_accuracy, baseline_time, None, nan, nan, nan)
    best = int(reach[np.lexsort((reach, -ra[reach], rt[reach]))[0]])
    recipe_time = float(rt[best])
    return HeadlineSpeedup(
        target_accuracy, baseline_time, best, recipe_time, float(ra[best]), baseline_time / recipe_time
    )
