"""The frontier of a search, computed once: completed trials, Pareto fronts, baseline curve, speedups, headline.

The live progress table, the CLI summary, the report and the benchmarks all read one ``Frontier``
(Optuna's "compute an info object, render it many times" habit), so "completed", "on the front",
"speedup" and "headline" have one definition each:

- *metric*: the column the search selects on: ``val_accuracy`` when the space's ``metric_split`` is
  "val", else the test ``accuracy``. Fronts, speedups and the headline use it; never test accuracy
  when the space selected on validation (the ``accuracy`` column stays in the rows for display).
- *completed*: state COMPLETE, a finite metric and a finite, positive ``train_seconds``.
- *objectives*: the space's, with "accuracy" read as the metric; ``cost`` counts only when every
  completed trial has a finite cost (else the front is metric vs ``train_seconds``, with a warning).
- *front*: completed trials no other completed trial dominates; per-budget fronts use the same objectives.
- *baseline curve*: the envelope of the completed ``is_baseline`` trials (the base recipe at each budget).
- *speedup at matched accuracy* and *accuracy gain at matched time*: ``recipesearch.analysis.speedup``.
- *headline*: the fastest non-baseline trial reaching the longest baseline run's metric, and the largest
  measured (interpolated, not a bound) speedup on the front.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from recipesearch.analysis.pareto import pareto_mask, pareto_mask_by_group
from recipesearch.analysis.speedup import (
    INTERPOLATED,
    TradeoffCurve,
    accuracy_gains_at_matched_time,
    baseline_envelope,
    best_speedup_at_baseline_accuracy,
    speedups_at_matched_accuracy,
)

ACCURACY, VAL_ACCURACY, TIME, COST = "accuracy", "val_accuracy", "train_seconds", "cost"
COMPLETE = "COMPLETE"
# Direction of each objective a space may name ("accuracy" stands for the metric column).
DIRECTIONS = {ACCURACY: "maximize", VAL_ACCURACY: "maximize", TIME: "minimize", COST: "minimize"}
# Columns added to ``Frontier.trials``, in this order (the report's trials table and pareto.csv read them).
SPEEDUP_COLUMNS = ("speedup", "baseline_seconds", "accuracy_gain", "baseline_accuracy_at_time",
                   "speedup_status", "gain_status")  # fmt: skip


class ObjectiveSpec(Protocol):
    """What ``frontier`` reads of a search space (``SearchSpace`` and ``Objectives`` both have it)."""

    @property
    def objectives(self) -> Sequence[str]: ...
    @property
    def directions(self) -> Sequence[str]: ...
    @property
    def metric_split(self) -> str: ...


@dataclass(frozen=True)
class Objectives:
    """A space's objectives without the space: what run.json stores, for readers of a run directory.

    The default (used when run.json does not say) is what the data allows: accuracy vs training time,
    plus cost when every completed trial has one (the cost rule of ``frontier``), on test accuracy.
    """

    objectives: tuple[str, ...] = (ACCURACY, TIME, COST)
    directions: tuple[str, ...] = ("maximize", "minimize", "minimize")
    metric_split: str = "test"

    def __post_init__(self) -> None:
        if len(self.objectives) != len(self.directions):
            raise ValueError(f"objectives {self.objectives} and directions {self.directions} differ in length")
        if self.metric_split not in ("test", "val"):
            raise ValueError(f"metric_split must be 'test' or 'val', got {self.metric_split!r}")

    @classmethod
    def from_run_meta(cls, meta: Mapping[str, Any] | None) -> Objectives:
        """From run.json's "objectives", "directions" and "metric_split"; the default for what is missing.

        Directions that do not match the objectives (older or hand-edited files) are derived from the
        objective names instead, since each objective has one sensible direction.
        """
        meta = meta or {}
        split = meta.get("metric_split")
        split = split if split in ("test", "val") else "test"
        names = meta.get("objectives")
        if not (isinstance(names, (list, tuple)) and names and all(n in DIRECTIONS for n in names)
                and any(DIRECTIONS[n] == "maximize" for n in names)):
            return cls(metric_split=split)
        dirs = meta.get("directions")
        if not (isinstance(dirs, (list, tuple)) and len(dirs) == len(names)
                and all(d in ("maximize", "minimize") for d in dirs)):
            dirs = [DIRECTIONS[n] for n in names]
        return cls(tuple(str(n) for n in names), tuple(str(d) for d in dirs), split)


@dataclass(frozen=True)
class Headline:
    """The headline numbers (NaN / None when they cannot be computed), all on the frontier's metric."""

    baseline_accuracy: float  # metric of the longest baseline run: the target
    baseline_seconds: float  # earliest time on the baseline curve reaching the target
    baseline_budget: float  # budget of the longest baseline run
    number: int | None  # fastest non-baseline trial reaching the target
    algorithms: str
    recipe_seconds: float
    recipe_accuracy: float
    speedup: float  # baseline_seconds / recipe_seconds
    accuracy_gain: float  # best non-baseline metric within baseline_seconds - baseline_accuracy
    gain_number: int | None  # the trial achieving that accuracy
    # The largest speedup at matched accuracy measured on the frontier (interpolated along the baseline
    # curve, not a bound), at whatever accuracy that recipe reaches: often a short-budget recipe.
    front_speedup: float = float("nan")
    front_number: int | None = None
    front_algorithms: str = ""
    front_accuracy: float = float("nan")
    front_seconds: float = float("nan")
    recipe_budget: float = float("nan")  # budget of trial ``number``
    front_budget: float = float("nan")  # budget of trial ``front_number``


@dataclass(frozen=True, eq=False)
class Frontier:
    """Everything derived from (trials, objectives); ``trials`` keeps the input's rows, order and index."""

    metric: str  # column selected on: "val_accuracy" or "accuracy"
    objectives: tuple[str, ...]  # columns actually used (metric first), e.g. ("accuracy", "train_seconds")
    directions: tuple[str, ...]
    # The input rows + completed, on_front, on_budget_front and SPEEDUP_COLUMNS (NaN / "" unless completed).
    trials: pd.DataFrame
    on_recipe_front: pd.Series  # front of the completed non-baseline trials alone (what the search found)
    baseline: pd.DataFrame  # completed baseline trials by train_seconds, then number
    baseline_curve: TradeoffCurve  # their envelope on the metric: what speedups are measured against
    front: pd.DataFrame  # on_front rows by train_seconds, then metric (best first), then number
    headline: Headline
    warnings: tuple[str, ...]

    @property
    def completed(self) -> pd.Series:
        return self.trials["completed"]

    @property
    def on_front(self) -> pd.Series:
        return self.trials["on_front"]

    @property
    def on_budget_front(self) -> pd.Series:
        return self.trials["on_budget_front"]

    @property
    def completed_trials(self) -> pd.DataFrame:
        return self.trials[self.completed]


def metric_column(metric_split: str) -> str:
    """The column a space with this ``metric_split`` selects on."""
    return VAL_ACCURACY if metric_split == "val" else ACCURACY


def _bool_values(values: pd.Series) -> pd.Series:
    """CSV spellings of a flag (True, "true", 1, "1") as bool; NaN and anything else is False."""
    if values.dtype == bool:
        return values
    text = values.map(lambda v: str(v).strip().lower())
    return text.isin(("true", "1", "1.0", "yes", "t", "y")).astype(bool)


def _with_columns(trials: pd.DataFrame, metric: str) -> pd.DataFrame:
    """A copy with the columns the frontier reads present and typed (missing ones as NaN / '' / False)."""
    df = trials.copy()
    if "number" not in df:
        df["number"] = np.arange(len(df))
    df["state"] = df["state"].astype(str) if "state" in df else COMPLETE  # no state column: all finished
    for col in (metric, TIME, COST, "budget"):
        df[col] = pd.to_numeric(df[col], errors="coerce").astype(float) if col in df else np.nan
    df["is_baseline"] = _bool_values(df["is_baseline"]) if "is_baseline" in df else False
    df["algorithms"] = df["algorithms"].map(lambda s: s if isinstance(s, str) else "") if "algorithms" in df else ""
    return df


def _used_objectives(
    space: ObjectiveSpec, metric: str, cost: np.ndarray
) -> tuple[tuple[str, ...], tuple[str, ...], list[str]]:
    """The space's objectives as columns, after the cost rule (cost only when every completed trial has one)."""
    pairs = [(metric if DIRECTIONS.get(o) == "maximize" else o, d)
             for o, d in zip(space.objectives, space.directions, strict=True)]
    warnings = []
    if any(o == COST for o, _ in pairs) and not (len(cost) and np.isfinite(cost).all()):
        pairs = [(o, d) for o, d in pairs if o != COST]
        if TIME not in [o for o, _ in pairs]:
            pairs.append((TIME, "minimize"))  # a cost-only space is still judged on time, never on metric alone
        if np.isfinite(cost).any():
            warnings.append("cost is missing for some completed trials: the frontier ignores cost")
    return tuple(o for o, _ in pairs), tuple(d for _, d in pairs), warnings


def _speedup_columns(done: pd.DataFrame, baseline: pd.DataFrame, metric: str) -> pd.DataFrame:
    bt, ba = baseline[TIME].to_numpy(dtype=float), baseline[metric].to_numpy(dtype=float)
    t, a = done[TIME].to_numpy(dtype=float), done[metric].to_numpy(dtype=float)
    s = speedups_at_matched_accuracy(t, a, bt, ba)
    g = accuracy_gains_at_matched_time(t, a, bt, ba)
    return pd.DataFrame({
        "speedup": s.speedup, "baseline_seconds": s.baseline_time, "accuracy_gain": g.gain,
        "baseline_accuracy_at_time": g.baseline_accuracy, "speedup_status": s.status.astype(str),
        "gain_status": g.status.astype(str),
    }, index=done.index)  # fmt: skip


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


def _headline(done: pd.DataFrame, baseline: pd.DataFrame, front: pd.DataFrame, metric: str) -> Headline:
    nan = float("nan")
    cand = done[~done["is_baseline"]]
    h = best_speedup_at_baseline_accuracy(cand[TIME], cand[metric], baseline[TIME], baseline[metric])
    budget = nan
    if len(baseline):
        budget = float(baseline.sort_values([TIME, metric], ascending=[False, False]).iloc[0]["budget"])
    number, algos, recipe_budget = None, "", nan
    if h.index is not None:
        row = cand.iloc[h.index]
        number, algos, recipe_budget = int(row["number"]), str(row["algorithms"]), float(row["budget"])
    # 2) the best metric any recipe reaches within the baseline's time to the target
    gain, gain_number = nan, None
    if np.isfinite(h.baseline_time) and np.isfinite(h.target_accuracy):
        within = cand[cand[TIME] <= h.baseline_time]
        if len(within):
            best = within.sort_values([metric, TIME, "number"], ascending=[False, True, True]).iloc[0]
            gain, gain_number = float(best[metric]) - h.target_accuracy, int(best["number"])
    # 3) the largest speedup measured anywhere on the front
    front_fields: dict[str, Any] = {}
    top = largest_front_speedup(front, metric)
    if top is not None:
        front_fields = {"front_speedup": float(top["speedup"]), "front_number": int(top["number"]),
                        "front_algorithms": str(top["algorithms"]), "front_accuracy": float(top[metric]),
                        "front_seconds": float(top[TIME]), "front_budget": float(top["budget"])}
    return Headline(float(h.target_accuracy), float(h.baseline_time), budget, number, algos, float(h.recipe_time),
                    float(h.recipe_accuracy), float(h.speedup), gain, gain_number, recipe_budget=recipe_budget,
                    **front_fields)  # fmt: skip


def frontier(trials: pd.DataFrame, space: ObjectiveSpec) -> Frontier:
    """Compute the frontier of ``trials`` (the trials.csv contract) under ``space``'s objectives.

    ``space`` is anything with ``objectives``, ``directions`` and ``metric_split``: a ``SearchSpace``
    during a search, ``Objectives.from_run_meta(run_json)`` when only the run directory is at hand.
    Robust to empty frames and missing columns (a search that has not finished a trial yet).
    """
    metric = metric_column(space.metric_split)
    df = _with_columns(trials, metric)

    # 1) completed trials and the objectives actually used (the cost rule)
    metric_values, seconds = df[metric].to_numpy(dtype=float), df[TIME].to_numpy(dtype=float)
    done = pd.Series(df["state"].eq(COMPLETE).to_numpy() & np.isfinite(metric_values) & np.isfinite(seconds)
                     & (seconds > 0), index=df.index, dtype=bool)
    df["completed"] = done
    completed = df[done]
    objectives, directions, warnings = _used_objectives(space, metric, completed[COST].to_numpy(dtype=float))

    # 2) fronts: overall, per budget, and among the recipes alone
    df["on_front"] = False
    df["on_budget_front"] = False
    on_recipe_front = pd.Series(False, index=df.index, dtype=bool)
    if len(completed):
        points = completed[list(objectives)].to_numpy(dtype=float)
        df.loc[done, "on_front"] = pareto_mask(points, directions)
        df.loc[done, "on_budget_front"] = pareto_mask_by_group(
            completed, list(objectives), list(directions), "budget").to_numpy()
        recipes = completed[~completed["is_baseline"]]
        on_recipe_front[recipes.index] = pareto_mask(recipes[list(objectives)].to_numpy(dtype=float), directions)

    # 3) baseline curve and the speedups of every completed trial against it
    baseline = df[done & df["is_baseline"]].sort_values([TIME, "number"]).reset_index(drop=True)
    curve = baseline_envelope(baseline[TIME], baseline[metric])
    for col in SPEEDUP_COLUMNS:
        df[col] = "" if col.endswith("_status") else np.nan
    if len(completed):
        speedups = _speedup_columns(completed, baseline, metric)
        for col in SPEEDUP_COLUMNS:
            df.loc[done, col] = speedups[col]
        if baseline.empty:
            warnings.append("no completed baseline trial: speedups at matched accuracy cannot be computed")
        elif len(curve.times) < 2:
            warnings.append("the baseline curve has one point: speedups are only bounds "
                            "(train the baseline at more budgets)")

    # 4) the front, fastest first, and the headline
    completed = df[done]
    front = completed[completed["on_front"]].sort_values([TIME, metric, "number"], ascending=[True, False, True])
    front = front.reset_index(drop=True)
    return Frontier(metric=metric, objectives=objectives, directions=directions, trials=df,
                    on_recipe_front=on_recipe_front, baseline=baseline, baseline_curve=curve, front=front,
                    headline=_headline(completed, baseline, front, metric), warnings=tuple(warnings))

