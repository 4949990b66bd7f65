"""Shared input handling: turn (points, directions) into a float array where every objective is minimised.

Optuna's habit (``optuna/study/_multi_objective.py``): normalise directions once, then all the
math (domination, hypervolume) is written for minimisation only, so it is written once.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

MAXIMIZE = "maximize"
MINIMIZE = "minimize"


def direction_signs(directions: Sequence[str]) -> np.ndarray:
    """+1 for "minimize", -1 for "maximize": multiplying by it turns every objective into a minimisation."""
    if isinstance(directions, str):
        raise ValueError("directions must be a sequence such as ['maximize', 'minimize'], not a string")
    signs = []
    for d in directions:
        if d == MINIMIZE:
            signs.append(1.0)
        elif d == MAXIMIZE:
            signs.append(-1.0)
        else:
            raise ValueError(f"direction must be 'maximize' or 'minimize', got {d!r}")
    if not signs:
        raise ValueError("at least one objective direction is required")
    return np.asarray(signs)


def as_points(points: ArrayLike, k: int) -> np.ndarray:
    """Validate ``points`` as a float (n, k) array; an empty input of any shape becomes (0, k)."""
    arr = np.asarray(points, dtype=float)
    if arr.size == 0:
        return np.empty((0, k))
    if arr.ndim != 2 or arr.shape[1] != k:
        raise ValueError(f"points must have shape (n, {k}) to match the directions, got {arr.shape}")
    return arr


def as_minimization(points: ArrayLike, directions: Sequence[str]) -> np.ndarray:
    """(n, k) float copy of ``points`` with maximised objectives negated (NaN stays NaN)."""
    signs = direction_signs(directions)
    return as_points(points, len(signs)) * signs
