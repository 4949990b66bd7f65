"""The frontier of a search, computed once: runs, seed-mean points, Pareto front, curves, speedups, headline.

The live progress table, the CLI summary, the report and the benchmarks all read one ``Frontier``
(Optuna's "compute an info object, render it many times" habit), so "completed", "on the front",
"speedup", "confirmed" and "headline" have one definition each:

- *metric*: the column the search selects on: ``val_accuracy`` when the space's ``metric_split`` is
  "val", else the test ``accuracy``. Fronts, speedups and the headline use it; never test accuracy
  when the space selected on validation (test means are carried next to it, for display only).
- *completed*: state COMPLETE, a finite metric and a finite, positive ``train_seconds``.
- *recipe*: the params without the budget (``recipe_key``); every baseline run is the one recipe
  "baseline". Runs of one recipe at one budget are its seeds; their mean is a *point* (``points``)
  with Student-t 95 % intervals (``analysis.seeds``).
- *front*: points no other eligible point dominates on the objectives' means. Eligible: points measured
  on two or more seeds (confirmed recipes) and the baseline's, as soon as any recipe was confirmed;
  before that (during the search, or a space without confirmation) every point, with a warning.
- *baseline curve*: the envelope of the baseline points' means: what speedups are measured against.
- *speedup* of a point: at its mean metric, on the baseline curve (``analysis.speedup``), with a
  bootstrap interval over seeds for the front's points (``analysis.speedup_bootstrap``); *confirmed*
  only when that interval's lower bound is above 1 (``confirmed_faster``).
- *recipe curves* (``recipes``): each recipe trained at two or more budgets, its curve against the
  baseline's at the higher accuracy both reach, with a bootstrap interval: MosaicML's curve-vs-curve
  speedup.
- *headline*: the confirmed-faster recipe curve with the largest speedup, with its interval; when none
  is confirmed, ``number`` is None and ``verdict`` says so ("nothing beat the baseline").
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from recipesearch.analysis.curve_speedup import CurveSpeedup
from recipesearch.analysis.pareto import pareto_mask, pareto_mask_by_group
from recipesearch.analysis.seeds import DEFAULT_CONFIDENCE, curve_by_budget
from recipesearch.analysis.speedup import (
    INTERPOLATED,
    TradeoffCurve,
    accuracy_gains_at_matched_time,
    baseline_envelope,
    speedups_at_matched_accuracy,
)
from recipesearch.analysis.speedup_bootstrap import bootstrap_curve_speedup, confirmed_faster

ACCURACY, VAL_ACCURACY, TIME, COST = "accuracy", "val_accuracy", "train_seconds", "cost"
COMPLETE = "COMPLETE"
BASELINE_KEY = "baseline"  # recipe_key of every baseline run
# Direction of each objective a space may name ("accuracy" stands for the metric column).
DIRECTIONS = {ACCURACY: "maximize", VAL_ACCURACY: "maximize", TIME: "minimize", COST: "minimize"}
# Columns added to ``Frontier.trials`` and ``Frontier.points``, in this order.
SPEEDUP_COLUMNS = ("speedup", "baseline_seconds", "accuracy_gain", "baseline_accuracy_at_time",
                   "speedup_status", "gain_status")  # fmt: skip
# Seed statistics of a point (pareto.csv's added columns, with SPEEDUP_CI_COLUMNS).
SEED_COLUMNS = ("n_seeds", "accuracy_mean", "accuracy_ci_low", "accuracy_ci_high", "test_accuracy_mean",
                "train_seconds_mean", "train_seconds_ci_low", "train_seconds_ci_high")  # fmt: skip
SPEEDUP_CI_COLUMNS = ("speedup_ci_low", "speedup_ci_high", "confirmed")
N_BOOT = 1000  # bootstrap replicates per interval; seeded, so a report is the same every time it is built


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
    """The headline: the confirmed-faster recipe curve with the largest speedup (NaN / None when there is
    none), plus the largest single-point speedup measured on the front. All on the frontier's metric."""

    baseline_accuracy: float  # the accuracy the curves are compared at (target)
    baseline_seconds: float  # baseline curve's time to reach it
    baseline_budget: float  # budget of the baseline's longest run
    number: int | None  # the confirmed recipe (its proposal's trial number); None: nothing confirmed
    algorithms: str
    recipe_seconds: float  # the recipe curve's time to reach the target
    recipe_accuracy: float  # = the target
    speedup: float  # baseline_seconds / recipe_seconds
    accuracy_gain: float  # best point metric within baseline_seconds - target
    gain_number: int | None
    front_speedup: float = float("nan")  # the largest interpolated point speedup on the front
    front_number: int | None = None
    front_algorithms: str = ""
    front_accuracy: float = float("nan")
    front_seconds: float = float("nan")
    recipe_budget: float = float("nan")  # NaN: a curve over budgets, not one budget
    front_budget: float = float("nan")
    speedup_ci_low: float = float("nan")
    speedup_ci_high: float = float("nan")
    confirmed: bool = False
    n_seeds: int = 0  # fewest seeds behind any budget of the recipe's curve
    n_budgets: int = 0
    verdict: str = ""  # one line for the CLI and the report


@dataclass(frozen=True, eq=False)
class Frontier:
    """Everything derived from (trials, objectives); ``trials`` keeps the input's rows, order and index."""

    metric: str  # column selected on: "val_accuracy" or "accuracy"
    objectives: tuple[str, ...]  # columns actually used (metric first), e.g. ("accuracy", "train_seconds")
    directions: tuple[str, ...]
    # The input rows + completed, recipe_key, on_front (its point is on the front), on_budget_front and
    # SPEEDUP_COLUMNS (each run against the baseline curve; NaN / "" unless completed).
    trials: pd.DataFrame
    on_recipe_front: pd.Series  # front of the completed non-baseline runs alone (what the search proposed)
    baseline: pd.DataFrame  # completed baseline runs by train_seconds, then number
    baseline_curve: TradeoffCurve  # envelope of the baseline points' means: what speedups are measured against
    # One row per (recipe, budget) of completed runs: the representative run's columns (lowest trial
    # number) with the metric, accuracy, val_accuracy, train_seconds and cost replaced by seed means, and
    # SEED_COLUMNS, eligible, on_front, on_budget_front, SPEEDUP_COLUMNS, SPEEDUP_CI_COLUMNS.
    points: pd.DataFrame
    front: pd.DataFrame  # on_front points by train_seconds, then metric (best first), then number
    recipes: pd.DataFrame  # recipe curves against the baseline's (RECIPE_COLUMNS), confirmed first
    headline: Headline
    warnings: tuple[str, ...]
    confirmed_front: bool = False  # the front is made of repeated (confirmed) points only

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

    @property
    def baseline_points(self) -> pd.DataFrame:
        if self.points.empty:
            return self.points.copy()
        return self.points[self.points["is_baseline"].astype(bool)].sort_values("budget").reset_index(drop=True)

    def recipe_test_accuracy(self, number: int | None) -> float:
        """Held-out test accuracy of trial ``number``'s recipe: the seed mean at the budget where its
        metric is best (what is shown next to a headline chosen on validation); NaN when unknown."""
        key = self.trials.loc[self.trials["number"] == number, "recipe_key"]
        mine = self.points[self.points["recipe_key"] == key.iloc[0]] if len(key) and len(self.points) else self.points
        if key.empty or mine.empty:
            return float("nan")
        return float(mine.sort_values(self.metric, ascending=False).iloc[0]["test_accuracy_mean"])


RECIPE_COLUMNS = ("recipe_key", "number", "algorithms", "n_budgets", "n_seeds", "speedup", "speedup_ci_low",
                  "speedup_ci_high", "speedup_status", "target_accuracy", "recipe_seconds", "baseline_seconds",
                  "recipe_unreached_fraction", "confirmed")  # fmt: skip


def finite(x: Any) -> bool:
    """A number that is neither NaN nor infinite (None, text and the like are not)."""
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def interval_text(low: Any, high: Any, *, dash: str = "-", label: bool = True, spec: str = ".2f") -> str:
    """' [95% CI 1.90-2.09]' (' [1.90-2.09]' without the label) after a speedup; '' without a finite interval.

    ``dash``: "–" for the HTML report and plots; the default ASCII hyphen where the text may be read back
    with any encoding (recipe files) or printed on any terminal."""
    if not (finite(low) and finite(high)):
        return ""
    return f" [{'95% CI ' if label else ''}{format(float(low), spec)}{dash}{format(float(high), spec)}]"


def metric_column(metric_split: str) -> str:
    """The column a space with this ``metric_split`` selects on."""
    return VAL_ACCURACY if metric_split == "val" else ACCURACY


def _bool_values(values: pd.Series) -> pd.Series:
    """CSV spellings of a flag (True, "true", 1, "1") as bool; NaN and anything else is False."""
    if values.dtype == bool:
        return values
    text = values.map(lambda v: str(v).strip().lower())
    return text.isin(("true", "1", "1.0", "yes", "t", "y")).astype(bool)


def _hardware_class(df: pd.DataFrame, done: pd.Series) -> tuple[str, dict[str, int]]:
    """The hardware class the frontier compares on, and completed runs per class (most first). One class:
    ("", counts) and nothing is filtered; several: the class with the most completed baseline runs (the
    curve every speedup is read against), then the most runs. Runs that do not say (studies from before
    the column) count as any class."""
    if "hardware" not in df:
        return "", {}
    known = df.loc[done, "hardware"].fillna("").astype(str)
    known = known[known != ""]
    counts = known.value_counts()
    if len(counts) < 2:
        return "", {str(k): int(v) for k, v in counts.items()}
    base = df.loc[known.index, "is_baseline"].astype(bool)
    order = sorted(counts.index, key=lambda h: (-int((known[base] == h).sum()), -int(counts[h]), str(h)))
    return str(order[0]), {str(h): int(counts[h]) for h in order}


def _recipe_keys(df: pd.DataFrame) -> pd.Series:
    """What identifies a recipe across budgets and seeds: a ``recipe_key`` column when the table has one;
    else the params without the budget (trials.csv); else the recipe JSON without budget and seed; else
    each row is its own recipe (so are rows whose key is empty). Every baseline run is the one recipe
    ``BASELINE_KEY``. Keys are built after ``algorithms`` is filled in (``_with_columns``)."""
    if "recipe_key" in df:
        keys = df["recipe_key"].map(lambda v: "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v))
    else:
        params = [c for c in df.columns if c.startswith("params_") and c != "params_budget"]
        if params:
            def key(row: pd.Series) -> str:
                values = {c[7:]: _plain(row[c]) for c in params}
                # the algorithms too: implied by the alg.* params, but a table may not have those
                values["algorithms"] = row.get("algorithms", "")
                return json.dumps({k: v for k, v in values.items() if v is not None}, sort_keys=True)
            keys = df.apply(key, axis=1) if len(df) else pd.Series([], dtype=str)
        elif "recipe_json" in df:
            keys = df["recipe_json"].map(_recipe_json_key)
        else:
            keys = pd.Series([""] * len(df), index=df.index)
    keys = pd.Series(keys, index=df.index, dtype=object)
    own = keys.eq("")
    keys[own] = "trial-" + df.loc[own, "number"].astype(str)
    # A run of the base recipe is a baseline run whatever stage trained it (the LR sweep's run at the LR it
    # chose is the baseline's first seed at that budget).
    base = df["is_baseline"].to_numpy(dtype=bool).copy()
    base |= keys.isin(set(keys[base]) - set(keys[own])).to_numpy()
    keys[base] = BASELINE_KEY
    return keys.astype(str)


def _plain(value: Any) -> Any:
    """A param value as a key part: NaN (the param was not asked) is None; numbers to 10 digits."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(f"{float(value):.10g}")
    text = str(value)
    if text in ("True", "False"):
        return text == "True"
    try:
        return float(f"{float(text):.10g}")
    except ValueError:
        return text


def _recipe_json_key(text: Any) -> str:
    try:
        data = json.loads(text) if isinstance(text, str) and text else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return ""
    for k in ("budget", "seed", "name", "threads"):
        data.pop(k, None)
    return json.dumps(data, sort_keys=True, default=str)


def _with_columns(trials: pd.DataFrame, metric: str) -> pd.DataFrame:
    """A copy with the columns the frontier reads present and typed (missing ones as NaN / '' / False)."""
    df = trials.copy()
    if "number" not in df:
        df["number"] = np.arange(len(df))
    df["state"] = df["state"].astype(str) if "state" in df else COMPLETE  # no state column: all finished
    for col in dict.fromkeys((metric, ACCURACY, VAL_ACCURACY, TIME, COST, "budget")):
        df[col] = pd.to_numeric(df[col], errors="coerce").astype(float) if col in df else np.nan
    df["is_baseline"] = _bool_values(df["is_baseline"]) if "is_baseline" in df else False
    df["algorithms"] = df["algorithms"].map(lambda s: s if isinstance(s, str) else "") if "algorithms" in df else ""
    if "hardware" in df:
        df["hardware"] = df["hardware"].map(lambda s: s if isinstance(s, str) else "")
    df["recipe_key"] = _recipe_keys(df)
    df["is_baseline"] = df["recipe_key"].eq(BASELINE_KEY)
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


def _speedup_columns(rows: pd.DataFrame, curve: TradeoffCurve, metric: str) -> pd.DataFrame:
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


def _distinct_seeds(done: pd.DataFrame) -> pd.DataFrame:
    """One run per (recipe, budget, seed): training the same recipe with the same seed again measures the
    same thing twice (a deterministic rerun), and counting both would shrink the interval for nothing.
    The earliest run is kept. Tables without a ``seed`` column are taken as they are."""
    if "seed" not in done or done.empty:
        return done
    seed = pd.to_numeric(done["seed"], errors="coerce")
    repeat = seed.notna() & done.assign(_seed=seed).sort_values("number").duplicated(
        ["recipe_key", "budget", "_seed"]).reindex(done.index)
    return done[~repeat]


def _points(done: pd.DataFrame, metric: str, confidence: float) -> pd.DataFrame:
    """One row per (recipe, budget): the representative run with seed means (module docstring)."""
    if done.empty:
        return pd.DataFrame(columns=[*done.columns, *SEED_COLUMNS])
    keys = ["recipe_key", "budget"]
    stats = curve_by_budget(done, ["recipe_key"], "budget", metric, TIME, confidence)
    stats = stats.rename(columns={"time_mean": "train_seconds_mean", "time_ci_low": "train_seconds_ci_low",
                                  "time_ci_high": "train_seconds_ci_high"})
    means = done.groupby(keys, sort=False, dropna=False)[[ACCURACY, VAL_ACCURACY, COST]].mean()
    first = done.sort_values("number").groupby(keys, sort=False, dropna=False).head(1).set_index(keys)
    out = first.drop(columns=[c for c in (ACCURACY, VAL_ACCURACY, COST) if c in first]).join(means)
    out = out.join(stats.set_index(keys)).reset_index()
    out["test_accuracy_mean"] = out[ACCURACY]
    out[metric] = out["accuracy_mean"]  # the metric column of a point is its seed mean
    out[TIME] = out["train_seconds_mean"]
    return out.sort_values([TIME, "number"]).reset_index(drop=True)


def _point_intervals(points: pd.DataFrame, done: pd.DataFrame, baseline_runs: pd.DataFrame, metric: str,
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


def _recipe_curves(done: pd.DataFrame, baseline_runs: pd.DataFrame, metric: str, confidence: float) -> pd.DataFrame:
    """Every recipe trained at two or more budgets: its curve against the baseline's (RECIPE_COLUMNS)."""
    rows = []
    recipes = done[~done["is_baseline"]]
    if not baseline_runs.empty:
        for key, runs in recipes.groupby("recipe_key", sort=False):
            if runs["budget"].nunique() < 2:
                continue
            r: CurveSpeedup = bootstrap_curve_speedup(runs, baseline_runs, n_boot=N_BOOT, confidence=confidence,
                                                      rng=0, acc_col=metric)
            first = runs.sort_values("number").iloc[0]
            rows.append({
                "recipe_key": key, "number": int(first["number"]), "algorithms": first["algorithms"],
                "n_budgets": int(runs["budget"].nunique()), "n_seeds": r.recipe_min_seeds,
                "speedup": r.speedup, "speedup_ci_low": r.ci_low, "speedup_ci_high": r.ci_high,
                "speedup_status": r.status, "target_accuracy": r.target_accuracy, "recipe_seconds": r.recipe_time,
                "baseline_seconds": r.baseline_time, "recipe_unreached_fraction": r.recipe_unreached_fraction,
                "confirmed": confirmed_faster(r),
            })  # fmt: skip
    table = pd.DataFrame(rows, columns=list(RECIPE_COLUMNS))
    if table.empty:
        return table
    table["confirmed"] = table["confirmed"].astype(bool)
    return table.sort_values(["confirmed", "speedup", "number"], ascending=[False, False, True],
                             na_position="last").reset_index(drop=True)


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


def _headline(points: pd.DataFrame, front: pd.DataFrame, recipes: pd.DataFrame, baseline: pd.DataFrame,
              curve: TradeoffCurve, metric: str) -> Headline:
    """In order: the confirmed recipe curve with the largest speedup (at the highest accuracy both curves
    reach); else the confirmed front point with the largest speedup (a claim at that point's accuracy);
    else nothing (``number`` None)."""
    nan = float("nan")
    budget = float(baseline["budget"].max()) if len(baseline) else nan
    fields: dict[str, Any] = {}
    top = largest_front_speedup(front, metric)
    if top is not None:
        fields = {"front_speedup": float(top["speedup"]), "front_number": int(top["number"]),
                  "front_algorithms": str(top["algorithms"]), "front_accuracy": float(top[metric]),
                  "front_seconds": float(top[TIME]), "front_budget": float(top["budget"])}
    confirmed = recipes[recipes["confirmed"]] if len(recipes) else recipes
    good_points = front[front["confirmed"].astype(bool)] if len(front) else front
    if len(confirmed):
        r = confirmed.iloc[0]
        target, base_s = float(r["target_accuracy"]), float(r["baseline_seconds"])
        gain, gain_number = _gain(points, base_s, target, metric)
        h = Headline(target, base_s, budget, int(r["number"]), str(r["algorithms"]), float(r["recipe_seconds"]),
                     target, float(r["speedup"]), gain, gain_number, speedup_ci_low=float(r["speedup_ci_low"]),
                     speedup_ci_high=float(r["speedup_ci_high"]), confirmed=True, n_seeds=int(r["n_seeds"]),
                     n_budgets=int(r["n_budgets"]), **fields)  # fmt: skip
    elif len(good_points):
        p = good_points.sort_values(["speedup", metric, "number"], ascending=[False, False, True]).iloc[0]
        target, base_s = float(p[metric]), float(p["baseline_seconds"])
        gain, gain_number = _gain(points, base_s, target, metric)
        h = Headline(target, base_s, budget, int(p["number"]), str(p["algorithms"]), float(p[TIME]), target,
                     float(p["speedup"]), gain, gain_number, recipe_budget=float(p["budget"]),
                     speedup_ci_low=float(p["speedup_ci_low"]), speedup_ci_high=float(p["speedup_ci_high"]),
                     confirmed=True, n_seeds=int(p["n_seeds"]), n_budgets=1, **fields)  # fmt: skip
    else:
        target = float(curve.accuracies.max()) if len(curve.accuracies) else nan
        base_s = float(curve.times[int(np.argmax(curve.accuracies))]) if len(curve.accuracies) else nan
        gain, gain_number = _gain(points, base_s, target, metric)
        h = Headline(target, base_s, budget, None, "", nan, nan, nan, gain, gain_number, **fields)
    return _with_verdict(h, recipes, curve, metric)


def _gain(points: pd.DataFrame, within_seconds: float, target: float, metric: str) -> tuple[float, int | None]:
    """The best non-baseline point metric within ``within_seconds``, minus ``target``."""
    if not (math.isfinite(within_seconds) and math.isfinite(target)) or points.empty:
        return float("nan"), None
    cand = points[~points["is_baseline"] & points["eligible"] & (points[TIME] <= within_seconds)]
    if cand.empty:
        return float("nan"), None
    best = cand.sort_values([metric, TIME, "number"], ascending=[False, True, True]).iloc[0]
    return float(best[metric]) - target, int(best["number"])


def _label(metric: str) -> str:
    return "val acc" if metric == VAL_ACCURACY else "test acc"


def _with_verdict(h: Headline, recipes: pd.DataFrame, curve: TradeoffCurve, metric: str) -> Headline:
    from dataclasses import replace

    best_curve = ""
    repeated = recipes[recipes["n_seeds"] >= 2] if len(recipes) else recipes
    if len(recipes):
        r = (repeated if len(repeated) else recipes).iloc[0]
        interval = interval_text(r["speedup_ci_low"], r["speedup_ci_high"]) if int(r["n_seeds"]) >= 2 \
            else " (one seed)"
        best_curve = (f"trial {int(r['number'])}, {float(r['speedup']):.2f}x{interval}"
                      if math.isfinite(float(r["speedup"])) else f"trial {int(r['number'])}, {r['speedup_status']}")
    if h.confirmed and h.n_budgets >= 2:
        text = (f"confirmed: trial {h.number} ({h.algorithms or 'no algorithms'}) is {h.speedup:.2f}x faster"
                f"{interval_text(h.speedup_ci_low, h.speedup_ci_high)} than the baseline at {_label(metric)} "
                f"{h.baseline_accuracy:.4f} ({h.recipe_seconds:.2f} s vs {h.baseline_seconds:.2f} s; curves over "
                f"{h.n_budgets} budgets, {h.n_seeds}+ seeds each)")
    elif h.confirmed:
        best = float(curve.accuracies.max()) if len(curve.accuracies) else float("nan")
        text = (f"confirmed at {_label(metric)} {h.baseline_accuracy:.4f}: trial {h.number} "
                f"({h.algorithms or 'no algorithms'}, budget {h.recipe_budget:g}) is {h.speedup:.2f}x faster"
                f"{interval_text(h.speedup_ci_low, h.speedup_ci_high)} than the baseline ({h.recipe_seconds:.2f} s "
                f"vs {h.baseline_seconds:.2f} s, {h.n_seeds} seeds); at the baseline's best {best:.4f} no recipe "
                f"curve is confirmed faster" + (f" (best: {best_curve})" if best_curve else ""))
    elif len(repeated):
        text = (f"nothing beat the baseline: no recipe is faster beyond seed noise ({len(repeated)} recipe "
                f"curve(s) with repeated seeds; best: {best_curve})")
    else:
        text = "not confirmed: no recipe was trained at two or more budgets with repeated seeds" + (
            f" (best single-seed curve: {best_curve})" if best_curve else "")
    return replace(h, verdict=text)


def frontier(trials: pd.DataFrame, space: ObjectiveSpec, confidence: float = DEFAULT_CONFIDENCE) -> Frontier:
    """Compute the frontier of ``trials`` (the trials.csv contract) under ``space``'s objectives.

    ``space`` is anything with ``objectives``, ``directions`` and ``metric_split``: a ``SearchSpace``
    during a search, ``Objectives.from_run_meta(run_json)`` when only the run directory is at hand.
    Robust to empty frames and missing columns (a search that has not finished a trial yet).
    """
    metric = metric_column(space.metric_split)
    df = _with_columns(trials, metric)

    # 1) completed runs and the objectives actually used (the cost rule)
    metric_values, seconds = df[metric].to_numpy(dtype=float), df[TIME].to_numpy(dtype=float)
    done = pd.Series(df["state"].eq(COMPLETE).to_numpy() & np.isfinite(metric_values) & np.isfinite(seconds)
                     & (seconds > 0), index=df.index, dtype=bool)
    hardware, counts = _hardware_class(df, done)
    if hardware:  # times from different hardware do not compare: one class only (the baseline's)
        done &= df["hardware"].isin([hardware, ""]).to_numpy()
    df["completed"] = done
    completed = _distinct_seeds(df[done])
    objectives, directions, warnings = _used_objectives(space, metric, completed[COST].to_numpy(dtype=float))
    if len(counts) > 1:
        listed = ", ".join(f"{name}: {n} runs" for name, n in counts.items())
        warnings.append(f"trials ran on {len(counts)} hardware classes ({listed}): the frontier and every speedup "
                        f"use the runs on {hardware} only (times from different hardware do not compare)")

    # 2) points (seed means) and the baseline curve
    points = _points(completed, metric, confidence)
    baseline = completed[completed["is_baseline"]].sort_values([TIME, "number"]).reset_index(drop=True)
    base_points = points[points["is_baseline"]] if len(points) else points
    curve = baseline_envelope(base_points[TIME], base_points[metric]) if len(base_points) else \
        baseline_envelope([], [])

    # 3) which points may sit on the front, and the fronts
    repeated = points["n_seeds"].ge(2) if len(points) else pd.Series([], dtype=bool)
    confirmed_front = bool(len(points) and (repeated & ~points["is_baseline"]).any())
    points["eligible"] = (repeated | points["is_baseline"]) if confirmed_front else True
    points["on_front"] = False
    points["on_budget_front"] = False
    eligible = points[points["eligible"].astype(bool)] if len(points) else points
    if len(eligible):
        points.loc[eligible.index, "on_front"] = pareto_mask(eligible[list(objectives)].to_numpy(dtype=float),
                                                             directions)
        points.loc[eligible.index, "on_budget_front"] = pareto_mask_by_group(
            eligible, list(objectives), list(directions), "budget").to_numpy()
    if len(completed) and not confirmed_front and len(completed[~completed["is_baseline"]]):
        warnings.append("no recipe confirmed yet (repeated seeds): the frontier is made of single runs")
    on_recipe_front = pd.Series(False, index=df.index, dtype=bool)
    recipes_only = completed[~completed["is_baseline"]]
    if len(recipes_only):
        on_recipe_front[recipes_only.index] = pareto_mask(recipes_only[list(objectives)].to_numpy(dtype=float),
                                                          directions)

    # 4) speedups against the baseline curve: every run, every point; intervals for the front
    for col in SPEEDUP_COLUMNS:
        df[col] = "" if col.endswith("_status") else np.nan
        points[col] = "" if col.endswith("_status") else np.nan
    if len(completed):
        for col, values in _speedup_columns(completed, curve, metric).items():
            df.loc[done, col] = values
        for col, values in _speedup_columns(points, curve, metric).items():
            points[col] = values
        if baseline.empty:
            warnings.append("no completed baseline trial: speedups at matched accuracy cannot be computed")
        elif len(curve.times) < 2:
            warnings.append("the baseline curve has one point: speedups are only bounds "
                            "(train the baseline at more budgets)")
    for col, values in _point_intervals(points, completed, baseline, metric, confidence).items():
        points[col] = values
    points["confirmed"] = points["confirmed"].astype(bool)

    # 5) back to the runs: a run is on the front when its point is
    def keys(rows: pd.DataFrame) -> list[tuple[str, float]]:
        return list(zip(rows["recipe_key"], rows["budget"].fillna(-1.0), strict=True))  # NaN never matches NaN

    flags = dict(zip(keys(points), zip(points["on_front"], points["on_budget_front"], strict=True), strict=True))
    run_flags = [flags.get(k, (False, False)) if d else (False, False) for k, d in zip(keys(df), done, strict=True)]
    df["on_front"] = [bool(f[0]) for f in run_flags]
    df["on_budget_front"] = [bool(f[1]) for f in run_flags]

    # 6) the front, recipe curves and the headline
    front = points[points["on_front"]].sort_values([TIME, metric, "number"], ascending=[True, False, True])
    front = front.reset_index(drop=True)
    recipes = _recipe_curves(completed, baseline, metric, confidence)
    return Frontier(metric=metric, objectives=objectives, directions=directions, trials=df,
                    on_recipe_front=on_recipe_front, baseline=baseline, baseline_curve=curve, points=points,
                    front=front, recipes=recipes,
                    headline=_headline(points, front, recipes, baseline, curve, metric), warnings=tuple(warnings),
                    confirmed_front=confirmed_front)
