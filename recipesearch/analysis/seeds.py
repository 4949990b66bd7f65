"""Statistics over repeated seeds: a mean with its Student-t interval, and a tradeoff curve per budget.

A recipe's tradeoff curve (MosaicML's methodology) is one (time, accuracy) point per budget; with
several seeds per budget that point is the seed mean, and its interval says how far the next run may
land. Plain numpy/pandas/scipy, so the report's bands can be checked against a hand computation.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats

DEFAULT_CONFIDENCE = 0.95


class SeedStats(NamedTuple):
    """Mean over seeds with a two-sided Student-t interval for it."""

    n: int  # finite values used
    mean: float
    std: float  # sample standard deviation (ddof=1); NaN when n < 2
    ci_low: float  # NaN when n < 2: one seed says nothing about the spread
    ci_high: float


def t_half_width(std: np.ndarray, n: np.ndarray, confidence: float) -> np.ndarray:
    """Half-width of the t interval, std / sqrt(n) * t_{(1+c)/2, n-1}; NaN where n < 2."""
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        dof = np.where(n >= 2, n - 1, np.nan)
        quantile = stats.t.ppf(0.5 + confidence / 2, dof)
        return quantile * np.asarray(std, dtype=float) / np.sqrt(n)


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")


def seed_summary(values: ArrayLike, confidence: float = DEFAULT_CONFIDENCE) -> SeedStats:
    """Mean of ``values`` (one per seed) with a two-sided Student-t confidence interval.

    NaN values (failed runs) are left out and not counted in ``n``. With n = 1 the mean is that value
    and std, ci_low and ci_high are NaN: a single seed gives no estimate of the seed-to-seed spread,
    so no interval can be stated (rather than a misleading zero-width one). With n = 0 every field
    but ``n`` is NaN.
    """
    _check_confidence(confidence)
    v = np.asarray(values, dtype=float).reshape(-1)
    v = v[~np.isnan(v)]
    n = len(v)
    if n == 0:
        return SeedStats(0, float("nan"), float("nan"), float("nan"), float("nan"))
    mean = float(v.mean())
    std = float(v.std(ddof=1)) if n >= 2 else float("nan")
    half = float(t_half_width(np.array(std), np.array(n), confidence))
    return SeedStats(n, mean, std, mean - half, mean + half)


def curve_by_budget(
    df: pd.DataFrame,
    group_cols: Sequence[str],
    budget_col: str = "budget",
    acc_col: str = "accuracy",
    time_col: str = "train_seconds",
    confidence: float = DEFAULT_CONFIDENCE,
) -> pd.DataFrame:
    """One row per (group, budget): the seed means that make each group's tradeoff curve.

    ``group_cols`` name what identifies a recipe (e.g. ``["recipe_id"]`` or ``["algorithms"]``; pass
    ``[]`` for a table holding one recipe, such as the baseline's runs). Only ``group_cols``,
    ``budget_col``, ``acc_col`` and ``time_col`` are read, so the caller decides which accuracy
    (validation or test) the curve is made of. A row counts as a seed when its accuracy is finite and
    its time finite and positive; groups/budgets with no such row are left out.

    Columns: the group columns, the budget, ``n_seeds``, ``accuracy_mean``, ``accuracy_std``,
    ``accuracy_ci_low``, ``accuracy_ci_high``, ``time_mean``, ``time_std``, ``time_ci_low``,
    ``time_ci_high`` (Student-t intervals of the mean, as ``seed_summary``; NaN for a single seed).
    Sorted by group then budget.
    """
    _check_confidence(confidence)
    keys = [*group_cols, budget_col]
    acc = pd.to_numeric(df[acc_col], errors="coerce").to_numpy(dtype=float)
    time = pd.to_numeric(df[time_col], errors="coerce").to_numpy(dtype=float)
    # A non-positive time is a broken measurement (and has no log time on the curve): not a seed.
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(acc) & np.isfinite(time) & (time > 0)
    acc, time = acc[ok], time[ok]
    # Group codes in sorted key order (NaN keys last, as a group of their own), then numpy, not a pandas
    # groupby-agg: the bootstrap and the driver call this on tables of a few rows, hundreds of times a look,
    # where pandas' per-call overhead (~20 ms a call) was most of a search's analysis time.
    if group_cols:
        table = df.loc[ok, keys]
        codes = table.groupby(keys, sort=True, dropna=False).ngroup().to_numpy()
        key_rows = table.iloc[np.unique(codes, return_index=True)[1]].reset_index(drop=True)
    else:
        budgets, codes = np.unique(df[budget_col].to_numpy()[ok], return_inverse=True)
        key_rows = pd.DataFrame({budget_col: budgets})
    codes = codes.reshape(-1)
    n = np.bincount(codes, minlength=len(key_rows))
    columns: dict[str, Any] = {key: key_rows[key] for key in keys} | {"n_seeds": n}
    for prefix, values in (("accuracy", acc), ("time", time)):
        mean = np.bincount(codes, values, len(n)) / np.maximum(n, 1)
        squares = np.bincount(codes, (values - mean[codes]) ** 2, len(n))
        with np.errstate(invalid="ignore", divide="ignore"):
            std = np.where(n >= 2, np.sqrt(squares / (n - 1)), np.nan)  # NaN for one seed: no spread known
        half = t_half_width(std, n, confidence)
        columns |= {f"{prefix}_mean": mean, f"{prefix}_std": std,
                    f"{prefix}_ci_low": mean - half, f"{prefix}_ci_high": mean + half}
    return pd.DataFrame(columns)
