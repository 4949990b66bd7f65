"""Exact hypervolume of a set of trials, its growth over a search, and the default reference point.

Hypervolume (Zitzler & Thiele 1998) is the volume of objective space dominated by the points and
bounded by a reference point: one number that grows whenever the front improves anywhere, which is
why it is the progress measure of a multi-objective search. 2-D uses an O(n log n) sweep; 3-D and
higher use HSO slicing (While et al. 2006: sort by the last objective, sum slab depth times the
(k-1)-D hypervolume of the points below the slab), exact and fast enough for the tens to hundreds
of trials a recipe search produces.

Default reference point (``reference_point``; the report prints the one it used):
for each objective take the worst value among the completed trials (rows with NaN ignored) and push it
outward by 10% of that objective's range (max - min), or by 10% of |value| when the range is 0
(by 0.1 when the value is 0 as well), so that the worst trials still enclose a non-zero box.
An objective whose observed values are all >= 0 (accuracy, seconds, cost) is not pushed below 0:
e.g. accuracy's reference is max(0, min(acc) - 0.1 * range(acc)).
Points that do not strictly dominate the reference (worse or equal in some objective) contribute 0.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from recipesearch.analysis._objectives import as_minimization, direction_signs
from recipesearch.analysis.pareto import _nondominated

REFERENCE_MARGIN = 0.1  # fraction of an objective's range added beyond its worst value


def reference_point(
    points: ArrayLike, directions: Sequence[str], margin: float = REFERENCE_MARGIN
) -> np.ndarray:
    """Default reference point in the objectives' own units (see the module docstring).

    Rows with a NaN or infinite value are ignored; returns all-NaN when none is left (nothing completed).
    """
    signs = direction_signs(directions)
    raw = as_minimization(points, directions) * signs  # validated, original orientation
    finite = raw[np.isfinite(raw).all(axis=1)]
    if len(finite) == 0:
        return np.full(len(signs), np.nan)
    lo, hi = finite.min(axis=0), finite.max(axis=0)
    worst = np.where(signs > 0, hi, lo)
    span = hi - lo
    push = np.where(span > 0, margin * span, np.where(worst != 0, margin * np.abs(worst), margin))
    ref = worst + signs * push  # minimised: worst + push; maximised: worst - push
    # Non-negative quantities keep a non-negative reference (accuracy never below 0).
    return np.where((lo >= 0) & (ref < 0), 0.0, ref)


def _hv2d(values: np.ndarray, ref: np.ndarray) -> float:
    """Area dominated by minimisation points that all strictly dominate ``ref`` (sweep over x).

    In x order each point adds the strip between its y and the lowest y seen so far, as wide as
    ref_x - x; points not below that running minimum add nothing (vectorised with a running min).
    """
    order = np.lexsort((values[:, 1], values[:, 0]))
    x, y = values[order, 0], values[order, 1]
    lowest_before = np.concatenate([[ref[1]], np.minimum.accumulate(y)[:-1]])
    return float(np.sum((ref[0] - x) * np.clip(lowest_before - y, 0.0, None)))


def _hv(values: np.ndarray, ref: np.ndarray) -> float:
    """Exact hypervolume by HSO slicing down to the 2-D sweep; points strictly dominate ``ref``."""
    if len(values) == 0:
        return 0.0
    k = values.shape[1]
    if k == 1:
        return float(ref[0] - values[:, 0].min())
    if k == 2:
        return _hv2d(values, ref)
    values = values[_nondominated(values)]
    values = values[np.argsort(values[:, -1], kind="stable")]
    depths = np.diff(np.append(values[:, -1], ref[-1]))
    total = 0.0
    for i, depth in enumerate(depths):
        if depth > 0:  # a slab of zero depth (equal last coordinates) adds nothing
            total += depth * _hv(values[: i + 1, :-1], ref[:-1])
    return float(total)


def _prepare(
    points: ArrayLike, directions: Sequence[str], reference: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    signs = direction_signs(directions)
    ref = np.asarray(reference, dtype=float).reshape(-1)
    if ref.shape != signs.shape:
        raise ValueError(f"reference must have {len(signs)} values, got {ref.shape}")
    return as_minimization(points, directions), ref * signs


def _contributing(values: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Mask of rows that strictly dominate the reference (NaN rows never do)."""
    with np.errstate(invalid="ignore"):
        return (values < ref).all(axis=1)


def hypervolume(points: ArrayLike, directions: Sequence[str], reference: ArrayLike) -> float:
    """Exact hypervolume of ``points`` (n, k) w.r.t. ``reference`` (k,), both in the objectives' units.

    NaN rows and rows not strictly dominating the reference contribute nothing; duplicates are counted
    once. Returns NaN when the reference itself contains NaN (no completed trials to derive it from).
    """
    values, ref = _prepare(points, directions, reference)
    if np.isnan(ref).any():
        return float("nan")
    return _hv(values[_contributing(values, ref)], ref)


def hypervolume_history(
    points_in_trial_order: ArrayLike, directions: Sequence[str], reference: ArrayLike | None = None
) -> np.ndarray:
    """Hypervolume after each trial, in trial order: non-decreasing by construction.

    Failed trials (NaN rows) and points dominated by the current front keep the previous value, so
    only trials that change the front trigger a recomputation (over the front, not all trials).
    ``reference`` defaults to ``reference_point`` of all the points.
    """
    if reference is None:
        reference = reference_point(points_in_trial_order, directions)
    values, ref = _prepare(points_in_trial_order, directions, reference)
    history = np.zeros(len(values))
    if np.isnan(ref).any():
        return np.full(len(values), np.nan)
    useful = _contributing(values, ref)
    front = np.empty((0, values.shape[1]))
    current = 0.0
    for i, p in enumerate(values):
        if useful[i] and not (front <= p).all(axis=1).any():  # weakly dominated points add nothing
            keep = ~((p <= front).all(axis=1))  # drop front points the newcomer weakly dominates
            front = np.vstack([front[keep], p])
            current = _hv(front, ref)
        history[i] = current
    return history


class HypervolumeCurve(NamedTuple):
    """Hypervolume against the compute spent so far (one entry per trial, in trial order)."""

    cumulative_seconds: np.ndarray  # training seconds of all trials so far, failed ones included
    hypervolume: np.ndarray


def hypervolume_vs_compute(
    points: ArrayLike,
    times: ArrayLike,
    directions: Sequence[str],
    reference: ArrayLike | None = None,
) -> HypervolumeCurve:
    """Hypervolume history paired with cumulative training time, for "progress per GPU-second" plots.

    ``times`` are the trials' ``train_seconds`` in the same order as ``points``; failed trials still
    cost compute, so their known time counts, and an unknown (NaN) time counts as 0.
    """
    t = np.asarray(times, dtype=float).reshape(-1)
    hv = hypervolume_history(points, directions, reference)
    if len(t) != len(hv):
        raise ValueError(f"times has {len(t)} entries but there are {len(hv)} points")
    return HypervolumeCurve(np.cumsum(np.nan_to_num(t, nan=0.0)), hv)
