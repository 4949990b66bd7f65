"""The frontier of a search, computed once: runs, seed-mean points, Pareto front, curves, speedups, headline.

The live progress table, the CLI summary, the report and the benchmarks all read one ``Frontier``
(Optuna's "compute an info object, render it many times" habit), so "completed", "on the front",
"speedup", "confirmed" and "headline" have one definition each:

- *metric*: the column the search selects on: ``val_accuracy`` when the space's ``metric_split`` is
  "val", else the test ``accuracy`` (``analysis.objective_spec``). Fronts, speedups and the headline use
  it; never test accuracy when the space selected on validation (test means are carried next to it, for
  display only).
- *completed*: state COMPLETE, a finite metric and a finite, positive ``train_seconds``.
- *recipe*: the params without the budget (``analysis.recipe_keys``); every baseline run is the one
  recipe "baseline". Runs of one recipe at one budget are its seeds; their mean is a *point*
  (``points``) with Student-t 95 % intervals (``analysis.points``).
- *front*: points no other eligible point dominates on the objectives' means. Eligible: points measured
  on two or more seeds (confirmed recipes) and the baseline's, as soon as any recipe was confirmed;
  before that (during the search, or a space without confirmation) every point, with a warning.
- *baseline curve*: the envelope of the baseline points' means: what speedups are measured against. Once
  the confirmation stage has re-run the baseline beside the candidates at every budget, that *paired*
  baseline is the one (``analysis.paired_baseline``); the baseline stage's runs are kept as the early one.
- *speedup* of a point: at its mean metric, on the baseline curve (``analysis.speedup``), with a
  bootstrap interval over seeds for the front's points (``analysis.points``); *confirmed* only when
  that interval's lower bound is above 1 (``confirmed_faster``).
- *target*: the accuracy the headline is measured at (``analysis.target``): the space's ``target``, by default
  the baseline's seed mean at budget 1 (what the user's recipe gets today).
- *recipe curves* (``recipes``): each recipe trained at two or more budgets, its curve against the
  baseline's to the target, with a bootstrap interval: MosaicML's curve-vs-curve speedup
  (``analysis.recipe_curves``).
- *headline*: the confirmed-faster recipe curve with the largest speedup to the target, with its interval;
  when none is confirmed there, ``number`` is None and ``verdict`` says why (``analysis.headline``); with it,
  what the search cost and when the recipe pays it back (``payback``).

This module holds the ``Frontier`` object and the one function that assembles it from those parts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from recipesearch.analysis.headline import Headline, choose_headline
from recipesearch.analysis.objective_spec import DIRECTIONS, Objectives, ObjectiveSpec, used_objectives
from recipesearch.analysis.paired_baseline import baseline_masks, baseline_shift, covers, shift_warning
from recipesearch.analysis.pareto import pareto_mask, pareto_mask_by_group
from recipesearch.analysis.points import SPEEDUP_COLUMNS, distinct_seeds, point_intervals, seed_points, speedup_columns
from recipesearch.analysis.recipe_curves import curve_of, recipe_curves
from recipesearch.analysis.recipe_keys import BASELINE_KEY, recipe_keys
from recipesearch.analysis.seeds import DEFAULT_CONFIDENCE
from recipesearch.analysis.speedup import TradeoffCurve, baseline_envelope
from recipesearch.analysis.target import BASELINE, Payback, Target, payback, reference_budget, resolve_target
from recipesearch.analysis.text import finite
from recipesearch.trials_columns import ACCURACY, COST, TIME, VAL_ACCURACY, metric_column

# Public at this path too: engine/, runcheck, report/reconcile and bench/ import these from analysis.frontier.
__all__ = ["BASELINE_KEY", "DIRECTIONS", "Frontier", "Headline", "Objectives", "ObjectiveSpec", "finite", "frontier"]

COMPLETE = "COMPLETE"


@dataclass(frozen=True, eq=False)
class Frontier:
    """Everything derived from (trials, objectives); ``trials`` keeps the input's rows, order and index."""

    metric: str  # column selected on: "val_accuracy" or "accuracy"
    objectives: tuple[str, ...]  # columns actually used (metric first), e.g. ("accuracy", "train_seconds")
    directions: tuple[str, ...]
    # The input rows + completed, recipe_key, on_front (its point is on the front), on_budget_front and
    # SPEEDUP_COLUMNS (analysis.points: each run against the baseline curve; NaN / "" unless completed).
    trials: pd.DataFrame
    on_recipe_front: pd.Series  # front of the completed non-baseline runs alone (what the search proposed)
    baseline: pd.DataFrame  # completed baseline runs by train_seconds, then number
    baseline_curve: TradeoffCurve  # envelope of the baseline points' means: what speedups are measured against
    # One row per (recipe, budget) of completed runs: the representative run's columns (lowest trial
    # number) with the metric, accuracy, val_accuracy, train_seconds and cost replaced by seed means, and
    # SEED_COLUMNS, eligible, on_front, on_budget_front, SPEEDUP_COLUMNS, SPEEDUP_CI_COLUMNS (analysis.points).
    points: pd.DataFrame
    front: pd.DataFrame  # on_front points by train_seconds, then metric (best first), then number
    recipes: pd.DataFrame  # recipe curves against the baseline's (analysis.recipe_curves), confirmed first
    headline: Headline
    warnings: tuple[str, ...]
    confirmed_front: bool = False  # the front is made of repeated (confirmed) points only
    # The paired baseline (analysis.paired_baseline): True when ``baseline`` is the one re-run beside the
    # candidates; then ``early_baseline`` is the baseline stage's runs and ``early_baseline_curve`` its envelope,
    # and ``baseline_shift`` compares the two per budget.
    paired: bool = False
    early_baseline: pd.DataFrame | None = None
    early_baseline_curve: TradeoffCurve | None = None
    baseline_shift: pd.DataFrame | None = None
    target: Target | None = None  # the accuracy the headline and the recipe curves are measured at
    payback: Payback | None = None  # what the search cost, and when the headline recipe pays it back

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

    def point(self, number: int, budget: float) -> pd.Series | None:
        """The seed-mean point of trial ``number``'s recipe at ``budget`` (``points``); None when there is none."""
        key = self.trials.loc[self.trials["number"] == number, "recipe_key"]
        if key.empty:
            return None
        mine = self.points[(self.points["recipe_key"] == key.iloc[0])
                           & np.isclose(self.points["budget"].astype(float), float(budget))]
        return mine.iloc[0] if len(mine) else None

    def elsewhere_text(self) -> str:
        """``headline.elsewhere`` as the CLI and ``recipesearch report`` print it: chosen on validation, the point's
        held-out test accuracy after it (here, not in the headline, which nothing of test may touch)."""
        h = self.headline
        if not h.elsewhere or self.metric != VAL_ACCURACY:
            return h.elsewhere
        point = self.point(h.front_number, h.front_budget)
        test = float(point["test_accuracy_mean"]) if point is not None else float("nan")
        return h.elsewhere + (f"; test acc {test:.4f} (held out)" if math.isfinite(test) else "")


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
    df["recipe_key"] = recipe_keys(df)
    df["is_baseline"] = df["recipe_key"].eq(BASELINE_KEY)
    return df


def frontier(trials: pd.DataFrame, space: ObjectiveSpec, confidence: float = DEFAULT_CONFIDENCE) -> Frontier:
    """Compute the frontier of ``trials`` (the trials.csv contract) under ``space``'s objectives.

    ``space`` is anything with ``objectives``, ``directions`` and ``metric_split`` (and ``target``, else the
    baseline at budget 1): a ``SearchSpace`` during a search, ``Objectives.from_run_meta(run_json)`` when only
    the run directory is at hand.
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
    # the baseline speedups are measured against: the paired one once it covers every budget, else the early one
    paired_runs, early_runs = baseline_masks(df, done)
    paired = covers(df[early_runs], distinct_seeds(df[paired_runs]))
    unused = early_runs if paired else paired_runs
    completed = distinct_seeds(df[done & ~unused])
    objectives, directions, warnings = used_objectives(space, metric, completed[COST].to_numpy(dtype=float))
    if len(counts) > 1:
        listed = ", ".join(f"{name}: {n} runs" for name, n in counts.items())
        warnings.append(f"trials ran on {len(counts)} hardware classes ({listed}): the frontier and every speedup "
                        f"use the runs on {hardware} only (times from different hardware do not compare)")

    # 2) points (seed means) and the baseline curve
    points = seed_points(completed, metric, confidence)
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
        for col, values in speedup_columns(completed, curve, metric).items():
            df.loc[done, col] = values
        for col, values in speedup_columns(points, curve, metric).items():
            points[col] = values
        if baseline.empty:
            warnings.append("no completed baseline trial: speedups at matched accuracy cannot be computed")
        elif len(curve.times) < 2:
            warnings.append("the baseline curve has one point: speedups are only bounds "
                            "(train the baseline at more budgets)")
    # a point's interval against the baseline's budgets with repeated seeds: ``baseline.seeds_elsewhere`` leaves the
    # others at one seed, which measures no noise where the point's accuracy is read (recipe curves, at the target,
    # keep them as anchors: speedup_bootstrap._min_seeds)
    for col, values in point_intervals(points, completed, curve_of(baseline), metric, confidence).items():
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
    target = resolve_target(getattr(space, "target", BASELINE), base_points, metric)
    recipes = recipe_curves(completed, baseline, metric, confidence, target.accuracy)
    headline = choose_headline(points, front, recipes, baseline, curve, metric, target)
    early = shift = early_curve = None
    if paired:
        early = distinct_seeds(df[early_runs]).sort_values([TIME, "number"]).reset_index(drop=True)
        early_points = seed_points(early, metric, confidence)
        early_curve = baseline_envelope(early_points[TIME], early_points[metric])
        shift = baseline_shift(early, baseline, metric, confidence)
        moved = shift_warning(shift)
        if moved:
            warnings.append(moved)
    return Frontier(metric=metric, objectives=objectives, directions=directions, trials=df,
                    on_recipe_front=on_recipe_front, baseline=baseline, baseline_curve=curve, points=points,
                    front=front, recipes=recipes, headline=headline, warnings=tuple(warnings),
                    confirmed_front=confirmed_front, paired=paired, early_baseline=early,
                    early_baseline_curve=early_curve, baseline_shift=shift, target=target,
                    payback=_payback(headline, df, base_points))


def _payback(h: Headline, runs: pd.DataFrame, base_points: pd.DataFrame) -> Payback:
    """What the search cost (every run in ``runs``), in trainings of the baseline at the reference budget, and
    what the headline recipe saves a training to the target."""
    unit = float("nan")
    if len(base_points):
        budget = reference_budget(base_points["budget"].to_numpy(dtype=float))
        unit = float(base_points.loc[np.isclose(base_points["budget"].astype(float), budget), TIME].iloc[0])
    return payback(runs, unit, h.baseline_seconds - h.recipe_seconds if h.confirmed else float("nan"))
