"""``ReportInfo``: everything the report shows, computed once from a run directory.

"Compute once, render many" (Optuna's plot ``_get_*_info`` habit): ``build_info`` turns trials.csv,
run.json and space.yaml into one immutable object; the CSV/YAML export, the plots and the HTML page only
read it, so every number is computed (and tested) in one place without drawing anything.

Definitions (completed, frontier, baseline curve, speedup at matched accuracy, headline) are
``recipesearch.analysis.frontier``'s, shared with the live search display and the benchmarks; they are
taken on the metric the search selected on (run.json's ``metric_split``), so on ``val_accuracy`` for a
search that selected on validation, while the ``accuracy`` columns show test accuracy.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import yaml

from recipesearch.analysis import (
    Headline,
    Objectives,
    TradeoffCurve,
    algorithm_effects,
    frontier,
    hypervolume,
    hypervolume_vs_compute,
    pairwise_interactions,
    reference_point,
    regime_recipes,
)
from recipesearch.errors import UserError
from recipesearch.rundir import RunDir, normalise_trials

ACC, TIME, COST = "accuracy", "train_seconds", "cost"
RECIPE_MARKER = "recipesearch frontier recipe"  # first comment line of every exported recipe
MAX_CURVE_GROUPS = 5  # recipes drawn in the accuracy-vs-time-across-budgets plot

_END_KEYS = ("end_time", "finished_at", "ended_at")  # run.json keys of a search that ended


class RunFiles(NamedTuple):
    """The stored inputs of a report: ``build_info(*load_run(run_dir), run_dir=run_dir)``."""

    trials: pd.DataFrame
    run_meta: dict[str, Any]
    space_text: str


@dataclass(frozen=True)
class FrontRecipe:
    """One frontier trial's replayable recipe file (``yaml_text`` is None when ``error`` says why)."""

    number: int
    recipe_id: str | None
    filename: str | None  # relative to the run dir: recipes/<recipe_id>.yaml
    yaml_text: str | None
    error: str | None = None


@dataclass(frozen=True, eq=False)
class ReportInfo:
    run_dir: str | None
    space_name: str
    space_hash: str
    space_text: str
    objectives: tuple[str, ...]
    directions: tuple[str, ...]
    param_columns: tuple[str, ...]
    trials: pd.DataFrame  # every trial by number; + completed, on_front, on_budget_front, speedup columns
    completed: pd.DataFrame
    failed: pd.DataFrame  # number, state, budget, algorithms, error
    front: pd.DataFrame  # frontier by train_seconds; + speedup, baseline_seconds, speedup_status, gains
    budgets: tuple[float, ...]  # distinct budgets of the completed trials
    baseline: pd.DataFrame  # completed baseline trials by train_seconds
    baseline_curve: TradeoffCurve  # its envelope (what speedups are measured against)
    reference: tuple[float, ...]  # hypervolume reference point, in the objectives' units
    hypervolume: float
    hv_history: pd.DataFrame  # number, cumulative_seconds, hypervolume (one row per trial)
    headline: Headline
    regimes: pd.DataFrame  # band, label, number, budget, accuracy, train_seconds, algorithms, speedup...
    effects: pd.DataFrame  # recipesearch.analysis.algorithm_effects
    interactions: pd.DataFrame  # recipesearch.analysis.pairwise_interactions
    budget_curves: pd.DataFrame  # group, label, budget, accuracy, train_seconds, n: leading recipes
    recipes: tuple[FrontRecipe, ...]  # one per frontier row, same order
    run_meta: dict[str, Any]
    hardware: dict[str, Any]
    versions: dict[str, Any]
    run_status: str  # "running", "finished", or run.json's status ("interrupted", "failed")
    warnings: tuple[str, ...]
    generated_at: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))

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


# 1) reading -------------------------------------------------------------------------------------


def load_run(run_dir: str | Path) -> RunFiles:
    """Read trials.csv (required), run.json and space.yaml (optional) through the run directory's reader."""
    run = RunDir(run_dir)
    return RunFiles(run.read_trials(), run.read_meta(), run.read_space_text())


def algorithms_label(algorithms: str, is_baseline: bool = False) -> str:
    """'label_smoothing+mixup' -> 'label_smoothing + mixup'; none -> 'baseline' or 'no algorithms'."""
    if algorithms:
        return algorithms.replace("+", " + ")
    return "baseline" if is_baseline else "no algorithms"


# 2) the pieces ----------------------------------------------------------------------------------


def _space_name_and_hash(space_text: str, meta: dict[str, Any], run_dir: str | None) -> tuple[str, str]:
    name = None
    try:
        data = yaml.safe_load(space_text) if space_text else None
        if isinstance(data, dict) and data.get("name") is not None:
            name = str(data["name"])
    except yaml.YAMLError:
        pass
    name = name or str(meta.get("space_name") or meta.get("space") or (Path(run_dir).name if run_dir else "search"))
    digest = meta.get("space_hash")
    if not digest:
        digest = hashlib.sha256(space_text.encode()).hexdigest()[:12] if space_text else "unknown"
    return name, str(digest)


def _fmt_param(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def _group_key(row: pd.Series, param_cols: list[str]) -> str:
    """Identity of a recipe apart from its budget (and seed): the recipe JSON without them, else the params."""
    try:
        data = json.loads(row["recipe_json"]) if row["recipe_json"] else None
    except json.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        for key in ("budget", "name", "seed"):
            data.pop(key, None)
        return json.dumps(data, sort_keys=True)
    params = {c: row[c] for c in param_cols if pd.notna(row[c])}
    return json.dumps([row["algorithms"], params], sort_keys=True, default=str)


def _budget_curves(completed: pd.DataFrame, param_cols: list[str]) -> pd.DataFrame:
    """Mean accuracy and time per budget of the leading recipes tried at >= 2 budgets.

    Recipes are ranked by (has a frontier point, best accuracy); the baseline is drawn separately.
    """
    columns = ["group", "label", "budget", ACC, TIME, "n", "on_front"]
    cand = completed[~completed["is_baseline"] & completed["budget"].notna()]
    if cand.empty:
        return pd.DataFrame(columns=columns)
    not_budget = [c for c in param_cols if not c.endswith("budget")]
    keys = cand.apply(lambda r: _group_key(r, not_budget), axis=1)
    ranked = []
    for key, g in cand.groupby(keys, sort=False):
        if g["budget"].nunique() >= 2:
            ranked.append((bool(g["on_front"].any()), float(g[ACC].max()), -int(g["number"].min()), key, g))
    ranked.sort(key=lambda x: x[:3], reverse=True)
    rows = []
    for rank, (_, _, _, _, g) in enumerate(ranked[:MAX_CURVE_GROUPS]):
        first = g.iloc[0]
        varied = [c for c in not_budget if pd.notna(first[c])][:3]
        label = algorithms_label(first["algorithms"])
        if varied:
            label += " (" + ", ".join(f"{c.removeprefix('params_').split('.')[-1]}={_fmt_param(first[c])}"
                                      for c in varied) + ")"
        for budget, b in g.groupby("budget"):
            rows.append([rank, label, float(budget), float(b[ACC].mean()), float(b[TIME].mean()), len(b),
                         bool(b["on_front"].any())])
    return pd.DataFrame(rows, columns=columns)


def _fmt(x: float, spec: str) -> str:
    return format(x, spec) if isinstance(x, (int, float)) and np.isfinite(x) else "n/a"


_SPEEDUP_NOTE = {  # how the speedup line of a recipe's header reads, by status
    "interpolated": "{}x",
    "below_baseline": "at most {}x (less accurate than the shortest baseline run)",
    "beyond_baseline": "n/a (more accurate than any baseline run)",
    "no_baseline": "n/a (no baseline trial)",
}


def _front_recipes(
    front: pd.DataFrame, space_name: str, space_hash: str, run_dir: str | None
) -> tuple[FrontRecipe, ...]:
    """Validate each frontier trial's recipe_json and render its YAML with provenance comments."""
    from recipesearch import __version__
    from recipesearch.recipe import dump_recipe, recipe_from_dict

    out = []
    for _, row in front.iterrows():
        number = int(row["number"])
        if not row["recipe_json"]:
            out.append(FrontRecipe(number, row["recipe_id"] or None, None, None, "trials.csv has no recipe_json"))
            continue
        try:
            recipe = recipe_from_dict(json.loads(row["recipe_json"]), source=f"trial {number} recipe_json")
        except (json.JSONDecodeError, UserError) as exc:
            out.append(FrontRecipe(number, row["recipe_id"] or None, None, None, f"recipe not replayable: {exc}"))
            continue
        rid = recipe.id()
        speed = _SPEEDUP_NOTE.get(str(row["speedup_status"]), "{}x ({})").format(
            _fmt(row["speedup"], ".2f"), str(row["speedup_status"]).replace("_", " "))
        header = "\n".join([
            f"{RECIPE_MARKER} {rid}",
            f"trial {number} of search space '{space_name}' (space hash {space_hash})",
            f"measured: accuracy {_fmt(row[ACC], '.4f')}, train_seconds {_fmt(row[TIME], '.2f')}, "
            f"budget {_fmt(row['budget'], 'g')}, algorithms: {row['algorithms'] or 'none'}",
            f"speedup at matched accuracy vs the baseline: {speed}",
            f"run: {run_dir or 'unknown'}",
            f"written by recipesearch {__version__}; replay with: recipesearch train {rid}.yaml",
        ])  # fmt: skip
        out.append(FrontRecipe(number, rid, f"recipes/{rid}.yaml", dump_recipe(recipe, header=header)))
    return tuple(out)


def _run_status(trials: pd.DataFrame, meta: dict[str, Any]) -> str:
    """run.json's ``status`` (the search writes running / finished / interrupted / failed); else from trials."""
    status = str(meta.get("status") or "").lower()
    if status:
        return status
    if trials["state"].isin(["RUNNING", "WAITING"]).any():
        return "running"
    if meta.get("start_time") and not any(meta.get(k) for k in _END_KEYS):
        return "running"
    return "finished"


def _meta_dicts(meta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    hardware = meta.get("hardware")
    versions = meta.get("versions", meta.get("library_versions"))
    return (hardware if isinstance(hardware, dict) else {}), (versions if isinstance(versions, dict) else {})


# 3) assembly ------------------------------------------------------------------------------------


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
    space_name, space_hash = _space_name_and_hash(space_text, run_meta, run_dir)

    # 1)-3) completed trials, objectives, fronts, baseline curve and speedups: one frontier
    f = frontier(trials, Objectives.from_run_meta(run_meta))
    trials, done, objectives, directions = f.trials, f.completed, f.objectives, f.directions
    completed, baseline, curve, front = trials[done], f.baseline, f.baseline_curve, f.front.copy()
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
    headline = f.headline
    budgets = tuple(sorted(float(b) for b in completed["budget"].dropna().unique()))
    if len(front) and front["budget"].notna().any():
        regimes = regime_recipes(front[front["budget"].notna()], all_budgets=list(budgets))
        extra = front.set_index("number")[["algorithms", "is_baseline", "speedup", "speedup_status", "recipe_id"]]
        regimes = regimes.join(extra, on="number")
    else:
        regimes = pd.DataFrame(columns=["band", "label", "number", "budget", ACC, TIME, "algorithms", "is_baseline",
                                        "speedup", "speedup_status", "recipe_id"])
    effects = algorithm_effects(trials, front_mask=trials["on_front"])
    interactions = pairwise_interactions(trials)
    curves = _budget_curves(completed, param_cols)

    # 6) replayable recipes of the frontier
    recipes = _front_recipes(front, space_name, space_hash, run_dir)
    front["recipe_file"] = [r.filename or "" for r in recipes]
    front["recipe_id"] = [r.recipe_id or row for r, row in zip(recipes, front["recipe_id"], strict=True)]
    warnings += [f"trial {r.number}: {r.error}" for r in recipes if r.error]

    failed = trials[~done & trials["state"].isin(["FAIL", "COMPLETE", "PRUNED"])].copy()
    failed.loc[failed["state"].eq("COMPLETE") & failed["error"].eq(""), "error"] = \
        f"completed without a finite {f.metric} and positive train_seconds"
    hardware, versions = _meta_dicts(run_meta)
    if f.metric != ACC:
        warnings.append(f"the search selected on {f.metric}: the frontier, speedups and headline use it; "
                        "the accuracy columns show test accuracy")
    return ReportInfo(
        run_dir=run_dir, space_name=space_name, space_hash=space_hash, space_text=space_text,
        objectives=objectives, directions=directions, param_columns=tuple(param_cols),
        trials=trials, completed=completed.reset_index(drop=True),
        failed=failed[["number", "state", "budget", "algorithms", "error"]].reset_index(drop=True),
        front=front, budgets=budgets, baseline=baseline, baseline_curve=curve,
        reference=tuple(float(r) for r in ref), hypervolume=float(hv), hv_history=hv_history,
        headline=headline, regimes=regimes.reset_index(drop=True), effects=effects, interactions=interactions,
        budget_curves=curves, recipes=recipes, run_meta=run_meta, hardware=hardware, versions=versions,
        run_status=_run_status(trials, run_meta), warnings=tuple(warnings),
    )  # fmt: skip
