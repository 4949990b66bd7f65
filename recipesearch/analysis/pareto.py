"""Pareto front of trials (e.g. accuracy vs. training time) as a vectorised non-domination test.

Follows Optuna's ``_is_pareto_front``: normalise directions (maximise -> negate), then a point is
dominated when another point is <= in every objective and < in at least one. Exact duplicates do not
dominate each other, so both stay on the front (two trials with the same result are both worth showing).
Rows with any NaN (failed or unfinished trials) are never on the front and never dominate anything.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from recipesearch.analysis._objectives import as_minimization, direction_signs

# Rows compared per block: bounds the (block, n, k) temporary to a few tens of MB for large n.
_BLOCK = 512


def _nondominated(values: np.ndarray) -> np.ndarray:
    """Mask of rows of a finite-or-inf, NaN-free minimisation array that no other row dominates."""
    n = len(values)
    dominated = np.zeros(n, dtype=bool)
    for start in range(0, n, _BLOCK):
        block = values[start : start + _BLOCK]  # candidate dominators
        # [i, j]: block row i <= row j everywhere and < somewhere  ->  i dominates j.
        le = (block[:, None, :] <= values[None, :, :]).all(axis=2)
        lt = (block[:, None, :] < values[None, :, :]).any(axis=2)
        dominated |= (le & lt).any(axis=0)
    return ~dominated


def pareto_mask(points: ArrayLike, directions: Sequence[str]) -> np.ndarray:
    """Boolean mask (n,) of the points on the Pareto front.

    ``points`` is (n, k); ``directions`` has k entries, each "maximize" or "minimize".
    """
    values = as_minimization(points, directions)
    mask = np.zeros(len(values), dtype=bool)
    valid = ~np.isnan(values).any(axis=1)
    if valid.any():
        mask[valid] = _nondominated(values[valid])
    return mask


def pareto_front_order(points: ArrayLike, directions: Sequence[str]) -> np.ndarray:
    """Indices of the front, sorted for drawing a staircase.

    Sorted by the first minimised objective (training time), ties by the remaining objectives in
    their preferred order; when no objective is minimised, by the first objective's preferred order.
    """
    signs = direction_signs(directions)
    values = as_minimization(points, directions)
    idx = np.flatnonzero(pareto_mask(points, directions))
    minimised = np.flatnonzero(signs > 0)
    first = int(minimised[0]) if len(minimised) else 0
    keys_order = [first] + [j for j in range(len(signs)) if j != first]
    # np.lexsort sorts by the last key first, so pass the keys reversed.
    keys = [values[idx, j] for j in reversed(keys_order)]
    return idx[np.lexsort(keys)] if len(idx) else idx


def pareto_mask_by_group(
    df: pd.DataFrame,
    objectives: Sequence[str],
    directions: Sequence[str],
    group_col: str,
) -> pd.Series:
    """Per-group front (e.g. one front per training budget), as a bool Series aligned with ``df``.

    Rows whose group value is NaN form their own group rather than being silently dropped.
    """
    if len(objectives) != len(directions):
        raise ValueError("objectives and directions must have the same length")
    out = pd.Series(False, index=df.index, dtype=bool)
    values = df[list(objectives)].to_numpy(dtype=float)
    groups = df[group_col]
    positions = np.arange(len(df))
    for _, pos in pd.Series(positions, index=df.index).groupby(groups, dropna=False):
        p = pos.to_numpy()
        out.iloc[p] = pareto_mask(values[p], directions)
    return out
