"""``ReportInfo``: everything the report shows, computed once from a run directory.

"Compute once, render many" (Optuna's plot ``_get_*_info`` habit): ``build_info`` turns trials.csv,
run.json and space.yaml into one immutable object; the CSV/YAML export, the plots and the HTML page only
read it, so every number is computed (and tested) in one place without drawing anything. The pieces are
computed by their own modules: the tables (``report.tables``), the run's facts (``report.run_facts``),
the recipe files (``report.front_recipes``) and the notes (``report.notes``); their wording is
``report.point_text``'s and ``report.selection``'s.

Definitions (completed, frontier, baseline curve, speedup at matched accuracy, headline) are
``recipesearch.analysis.frontier``'s, shared with the live search display and the benchmarks; they are
taken on the metric the search selected on (run.json's ``metric_split``), so on ``val_accuracy`` for a
search that selected on validation, while the ``accuracy`` columns show test accuracy. Regime picks,
algorithm effects, interactions and the curves across budgets are on that metric too: everything that
chooses or ranks. Test accuracy is carried next to it as the held-out figure, never used to choose
(``Selection`` says which split chose, and the report's header says it to the reader).

Frontier rows are the frontier's *points*: a recipe at one budget, its seed means with 95 % intervals
(``n_seeds``, ``accuracy_ci_*``, ``train_seconds_ci_*``, a bootstrap ``speedup_ci_*`` and ``confirmed``),
named by their first run. Each also carries its recipe's tradeoff curve against the baseline's
(``CURVE_COLUMNS``, from ``Frontier.recipes``), so the tables, recipe files and regime picks can say whether
what they show is confirmed (``evidence``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from recipesearch.analysis import (
    Frontier,
    Headline,
    Objectives,
    TradeoffCurve,
    algorithm_effects,
    frontier,
    hypervolume,
    hypervolume_vs_compute,
    pairwise_interactions,
    reference_point,
)
from recipesearch.analysis.points import metric_interval_columns
from recipesearch.plugins import add_search_dir, user_code_dirs
from recipesearch.report.front_recipes import FrontRecipe, front_recipes
from recipesearch.report.notes import report_notes
from recipesearch.report.run_facts import meta_dicts, run_status, space_name_and_hash, val_fraction
from recipesearch.report.selection import Selection
from recipesearch.report.tables import budget_curves, regimes, with_curves
from recipesearch.rundir import RunDir, normalise_trials
from recipesearch.trials_columns import ACCURACY, TIME, metric_column


class RunFiles(NamedTuple):
    """The stored inputs of a report: ``build_info(*load_run(run_dir), run_dir=run_dir)``."""

    trials: pd.DataFrame
    run_meta: dict[str, Any]
    space_text: str


@dataclass(frozen=True, eq=False)
class ReportInfo:
    run_dir: str | None
    space_name: str
    space_hash: str
    space_text: str
    objectives: tuple[str, ...]
    directions: tuple[str, ...]
    selection: Selection  # the metric everything chooses on (objectives[0]) and how to describe it
    param_columns: tuple[str, ...]
    trials: pd.DataFrame  # every trial by number; + completed, on_front, on_budget_front, speedup columns
    completed: pd.DataFrame
    failed: pd.DataFrame  # number, state, budget, algorithms, error
    # Frontier points (seed means over each recipe's runs at one budget) by train_seconds: the representative
    # run's columns with seed means, n_seeds, CIs, speedup (+ CI, confirmed), recipe_file, and the point's
    # recipe curve (CURVE_COLUMNS: NaN / False when its recipe was trained at one budget only).
    front: pd.DataFrame
    budgets: tuple[float, ...]  # distinct budgets of the completed trials
    baseline: pd.DataFrame  # completed baseline trials (every seed) by train_seconds
    baseline_curve: TradeoffCurve  # envelope of the baseline points' means (what speedups are measured against)
    points: pd.DataFrame  # every (recipe, budget) point: seed means with 95 % CIs (Frontier.points)
    baseline_points: pd.DataFrame  # the baseline's points by budget: seed means with 95 % CIs
    recipe_curves: pd.DataFrame  # recipes trained at >= 2 budgets vs the baseline (Frontier.recipes), confirmed first
    confirmed_front: bool  # the front is made of repeated (confirmed) points; False: single runs
    reference: tuple[float, ...]  # hypervolume reference point, in the objectives' units
    hypervolume: float
    hv_history: pd.DataFrame  # number, cumulative_seconds, hypervolume (one row per trial)
    headline: Headline
    regimes: pd.DataFrame  # band, label, number, budget, metric, accuracy, train_seconds, algorithms, speedup...
    effects: pd.DataFrame  # recipesearch.analysis.algorithm_effects, on the metric
    interactions: pd.DataFrame  # recipesearch.analysis.pairwise_interactions, on the metric
    budget_curves: pd.DataFrame  # group, label, budget, metric, accuracy, train_seconds, n: leading recipes
    recipes: tuple[FrontRecipe, ...]  # one per frontier row, same order
    run_meta: dict[str, Any]
    hardware: dict[str, Any]
    versions: dict[str, Any]
    run_status: str  # "running", "finished", or run.json's status ("interrupted", "failed")
    warnings: tuple[str, ...]
    frontier: Frontier | None = None  # what all of the above was read from
    # ``recipesearch replicate``'s replication.csv in RUN_DIR/replication (analysis.replication.CLAIM_COLUMNS)
    replication: pd.DataFrame | None = None
    generated_at: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))

    @property
    def metric(self) -> str:
        """The accuracy column selected on ("val_accuracy" or "accuracy"); ``accuracy`` is always test."""
        return self.selection.metric

    @property
    def metric_interval(self) -> tuple[str, str]:
        """The seed interval's columns of the metric in ``points``/``front``: ('val_accuracy_ci_low', ...)."""
        return metric_interval_columns(self.metric)

    @property
    def in_progress(self) -> bool:
        return self.run_status == "running"

    @property
    def n_trials(self) -> int:
        return len(self.trials)

    @property
    def state_counts(self) -> dict[str, int]:
        return {str(k): int(v) for k, v in self.trials["state"].value_counts().items()}

    def recipe_for(self, number: int) -> FrontRecipe | None:
        return next((r for r in self.recipes if r.number == number), None)

    def recipe_test_accuracy(self, number: int | None) -> float:
        """Held-out test accuracy of trial ``number``'s recipe (``Frontier.recipe_test_accuracy``)."""
        return self.frontier.recipe_test_accuracy(number) if self.frontier is not None else float("nan")


# 1) reading -------------------------------------------------------------------------------------


def load_run(run_dir: str | Path) -> RunFiles:
    """Read trials.csv (required), run.json and space.yaml (optional) through the run directory's reader.

    A damaged file is a one-line UserError naming it (rundir/runcheck), never a report computed from
    defaults; trials.csv must hold the metric run.json says the search selected on (and its objectives).
    """
    from recipesearch.report.reconcile import NOTES_KEY, reconcile_trials, selection_meta

    run = RunDir(run_dir)
    meta = run.read_meta(strict=True)
    for folder in user_code_dirs(meta.get("user_code")):  # the frontier's recipes may name the user's code
        add_search_dir(folder)
    space_text = run.read_space_text(strict=True)
    # checked before anything is written (report/reconcile.py): the selection split, and trials.csv vs study.db
    meta, notes = selection_meta(run, meta, space_text)
    rebuilt, trial_notes = reconcile_trials(run, meta, space_text)
    metric = metric_column(Objectives.from_run_meta(meta).metric_split)
    required = [metric, *(o for o in meta.get("objectives") or () if o != ACCURACY)]
    trials = run.read_trials(required) if rebuilt is None else normalise_trials(rebuilt)
    if notes or trial_notes:
        meta = {**meta, NOTES_KEY: [*notes, *trial_notes]}
    return RunFiles(trials, meta, space_text)


# 2) assembly ------------------------------------------------------------------------------------


def read_replication(run_dir: str | Path | None) -> pd.DataFrame | None:
    """RUN_DIR/replication/replication.csv (``recipesearch replicate``), when there is a readable one."""
    if run_dir is None:
        return None
    path = Path(run_dir) / "replication" / "replication.csv"
    try:
        table = pd.read_csv(path) if path.is_file() else None
    except (OSError, ValueError):
        return None
    from recipesearch.analysis.replication import CLAIM_COLUMNS

    return table if table is not None and set(CLAIM_COLUMNS) <= set(table.columns) else None


def build_info(
    trials_df: pd.DataFrame,
    run_meta: dict[str, Any] | None = None,
    space_text: str = "",
    run_dir: str | Path | None = None,
) -> ReportInfo:
    """Compute everything the report shows from the stored trials (robust to empty and partial runs)."""
    run_meta = dict(run_meta or {})
    run_dir = str(Path(run_dir).resolve()) if run_dir is not None else run_meta.get("run_dir")
    trials = normalise_trials(trials_df)
    param_cols = [c for c in trials.columns if c.startswith("params_")]
    space_name, space_hash = space_name_and_hash(space_text, run_meta, run_dir)

    # 1)-3) completed trials, objectives, fronts, baseline curve and speedups: one frontier
    f = frontier(trials, Objectives.from_run_meta(run_meta))
    trials, done, objectives, directions = f.trials, f.completed, f.objectives, f.directions
    completed, baseline, curve = trials[done], f.baseline, f.baseline_curve
    front = with_curves(f.front, f.recipes)
    warnings = list(f.warnings)
    points = completed[list(objectives)].to_numpy(dtype=float)

    # 4) hypervolume and its history over trials and compute (failed trials cost compute too)
    ref = reference_point(points, directions)
    hv = hypervolume(points, directions, ref) if len(completed) else float("nan")
    all_points = trials[list(objectives)].to_numpy(dtype=float).copy()
    all_points[~done.to_numpy()] = np.nan
    hv_curve = hypervolume_vs_compute(all_points, trials[TIME].to_numpy(dtype=float), directions, ref)
    hv_history = pd.DataFrame({"number": trials["number"], "cumulative_seconds": hv_curve.cumulative_seconds,
                               "hypervolume": hv_curve.hypervolume})

    # 5) headline, regimes, effects, curves across budgets
    # (all on the metric selected on: each of them chooses or ranks)
    headline = f.headline
    selection = Selection(f.metric, val_fraction(trials))
    budgets = tuple(sorted(float(b) for b in completed["budget"].dropna().unique()))
    regime_table = regimes(front, budgets, f.metric)
    effects = algorithm_effects(trials, front_mask=trials["on_front"], metric=f.metric)
    interactions = pairwise_interactions(trials, metric=f.metric)
    curves = budget_curves(completed, param_cols, f.metric)

    # 6) replayable recipes of the frontier
    recipes = front_recipes(front, space_name, space_hash, run_dir, selection, run_meta.get("user_code"))
    front["recipe_file"] = [r.filename or "" for r in recipes]
    front["recipe_id"] = [r.recipe_id or row for r, row in zip(recipes, front["recipe_id"], strict=True)]
    warnings += [f"trial {r.number}: {r.error}" for r in recipes if r.error]

    failed = trials[~done & trials["state"].isin(["FAIL", "COMPLETE"])].copy()  # PRUNED: stopped, not failed
    failed.loc[failed["state"].eq("COMPLETE") & failed["error"].eq(""), "error"] = \
        f"completed without a finite {f.metric} and positive train_seconds"
    hardware, versions = meta_dicts(run_meta)
    return ReportInfo(
        run_dir=run_dir, space_name=space_name, space_hash=space_hash, space_text=space_text,
        objectives=objectives, directions=directions, selection=selection, param_columns=tuple(param_cols),
        trials=trials, completed=completed.reset_index(drop=True),
        failed=failed[["number", "state", "budget", "algorithms", "error"]].reset_index(drop=True),
        front=front, budgets=budgets, baseline=baseline, baseline_curve=curve, points=f.points,
        baseline_points=f.baseline_points, recipe_curves=f.recipes, frontier=f,
        confirmed_front=f.confirmed_front,
        reference=tuple(float(r) for r in ref), hypervolume=float(hv), hv_history=hv_history,
        headline=headline, regimes=regime_table.reset_index(drop=True), effects=effects, interactions=interactions,
        budget_curves=curves, recipes=recipes, run_meta=run_meta, hardware=hardware, versions=versions,
        run_status=run_status(trials, run_meta), replication=read_replication(run_dir),
        warnings=tuple(report_notes(selection, trials, run_meta, warnings)),
    )  # fmt: skip
