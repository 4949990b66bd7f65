"""Frontier points: a recipe at one budget measured over its seeds, and whether its speedup is confirmed.

Runs of one recipe (``recipe_key``) at one budget are its seeds; their mean is a *point*, with Student-t
95 % intervals (``analysis.seeds``). Each run and each point is read against the baseline curve (speedup
at matched accuracy, accuracy gain at matched time: ``analysis.speedup``). A front point's speedup gets
a bootstrap interval over its seeds and the baseline's (``analysis.speedup_bootstrap``) and is
*confirmed* only when that interval's lower bound is above 1.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from recipesearch.analysis.seeds import curve_by_budget
from recipesearch.analysis.speedup import (
    INTERPOLATED,
    TradeoffCurve,
    accuracy_gains_at_matched_time,
    speedups_at_matched_accuracy,
)
from recipesearch.analysis.speedup_bootstrap import bootstrap_curve_speedup, confirmed_faster
from recipesearch.trials_columns import ACCURACY, COST, TIME, VAL_ACCURACY, split_accuracy

# Columns added to ``Frontier.trials`` and ``Frontier.points``, in this order.
SPEEDUP_COLUMNS = ("speedup", "baseline_seconds", "accuracy_gain", "baseline_accuracy_at_time",
                   "speedup_status", "gain_status")  # fmt: skip
TIME_SEED_COLUMNS = ("train_seconds_mean", "train_seconds_ci_low", "train_seconds_ci_high")
SPEEDUP_CI_COLUMNS = ("speedup_ci_low", "speedup_ci_high", "confirmed")
N_BOOT = 1000  # bootstrap replicates per interval; seeded, so a report is the same every time it is built


def metric_interval_columns(metric: str) -> tuple[str, str]:
    """The seed interval's columns of the metric, named by its split: ('val_accuracy_ci_low', ...high)."""
    return split_accuracy(metric, "ci_low"), split_accuracy(metric, "ci_high")


def seed_columns(metric: str) -> tuple[str, ...]:
    """Seed statistics of a point (pareto.csv's added columns, with SPEEDUP_CI_COLUMNS), every accuracy named by
    its split: the metric's mean and interval (``val_accuracy_*`` or ``test_accuracy_*``), the test mean (the
    held-out figure of a validation search), then the time's."""
    test_mean = split_accuracy(ACCURACY, "mean")
    metric_stats = (split_accuracy(metric, "mean"), *metric_interval_columns(metric))
    return ("n_seeds", *metric_stats, *((test_mean,) if test_mean not in metric_stats else ()), *TIME_SEED_COLUMNS)


def distinct_seeds(done: pd.DataFrame) -> pd.DataFrame:
    """One run per (recipe, budget, seed): training the same recipe with the same seed again measures the
    same thing twice (a deterministic rerun), and counting both would shrink the interval for nothing.
    The earliest run is kept. Tables without a ``seed`` column are taken as they are."""
    if "seed" not in done or done.empty:
        return done
    seed = pd.to_numeric(done["seed"], errors="coerce")
    repeat = seed.notna() & done.assign(_seed=seed).sort_values("number").duplicated(
        ["recipe_key", "budget", "_seed"]).reindex(done.index)
    return done[~repeat]


def seed_points(done: pd.DataFrame, metric: str, confidence: float) -> pd.DataFrame:
    """One row per (recipe, budget): the representative run's columns (lowest trial number) with the
    metric, accuracy, val_accuracy, train_seconds and cost replaced by seed means, and ``seed_columns(metric)``."""
    if done.empty:
        return pd.DataFrame(columns=[*done.columns, *seed_columns(metric)])
    keys = ["recipe_key", "budget"]
    stats = curve_by_budget(done, ["recipe_key"], "budget", metric, TIME, confidence)
    metric_mean = split_accuracy(metric, "mean")
    low, high = metric_interval_columns(metric)
    stats = stats.rename(columns={"accuracy_mean": metric_mean, "accuracy_ci_low": low, "accuracy_ci_high": high,
                                  "time_mean": "train_seconds_mean", "time_ci_low": "train_seconds_ci_low",
                                  "time_ci_high": "train_seconds_ci_high"})
    stats = stats[[*keys, *(c for c in seed_columns(metric) if c in stats)]]
    means = done.groupby(keys, sort=False, dropna=False)[[ACCURACY, VAL_ACCURACY, COST]].mean()
    first = done.sort_values("number").groupby(keys, sort=False, dropna=False).head(1).set_index(keys)
    out = first.drop(columns=[c for c in (ACCURACY, VAL_ACCURACY, COST) if c in first]).join(means)
    out = out.join(stats.set_index(keys)).reset_index()
    out[split_accuracy(ACCURACY, "mean")] = out[ACCURACY]
    out[metric] = out[metric_mean]  # the metric column of a point is its seed mean
    out[TIME] = out["train_seconds_mean"]
    return out.sort_values([TIME, "number"]).reset_index(drop=True)


def speedup_columns(rows: pd.DataFrame, curve: TradeoffCurve, metric: str) -> pd.DataFrame:
    """Each row (a run or a point) against the baseline curve: speedup at matched accuracy, gain at matched time."""
    bt, ba = curve.times, curve.accuracies
    t, a = rows[TIME].to_numpy(dtype=float), rows[metric].to_numpy(dtype=float)
    s = speedups_at_matched_accuracy(t, a, bt, ba)
    g = accuracy_gains_at_matched_time(t, a, bt, ba)
    return pd.DataFrame({
        "speedup": s.speedup, "baseline_seconds": s.baseline_time, "accuracy_gain": g.gain,
        "baseline_accuracy_at_time": g.baseline_accuracy, "speedup_status": s.status.astype(str),
        "gain_status": g.status.astype(str),
    }, index=rows.index)  # fmt: skip


def point_intervals(points: pd.DataFrame, done: pd.DataFrame, baseline_runs: pd.DataFrame, metric: str,
                    confidence: float) -> pd.DataFrame:
    """Bootstrap speedup interval and the confirmed flag of each point on the front whose speedup is
    interpolated on the baseline curve (the others: NaN, not confirmed).

    The point is a one-budget curve; with the default target (the lower of its mean and the baseline's
    best) a replicate whose mean falls below the point's is measured where it is, not dropped
    (``bootstrap_curve_speedup``), so the interval is not made of the lucky draws only."""
    out = pd.DataFrame({"speedup_ci_low": np.nan, "speedup_ci_high": np.nan, "confirmed": False},
                       index=points.index)
    if baseline_runs.empty:
        return out
    runs_by_point = done.groupby(["recipe_key", "budget"], sort=False)
    measured = points["on_front"] & ~points["is_baseline"] & (points["speedup_status"] == INTERPOLATED)
    for i, p in points[measured].iterrows():
        runs = runs_by_point.get_group((p["recipe_key"], p["budget"]))
        r = bootstrap_curve_speedup(runs, baseline_runs, n_boot=N_BOOT, confidence=confidence, rng=0,
                                    acc_col=metric)
        out.loc[i, ["speedup_ci_low", "speedup_ci_high"]] = [r.ci_low, r.ci_high]
        out.loc[i, "confirmed"] = confirmed_faster(r)
    return out
