"""``ReportInfo``: everything the report shows, computed once from a run directory.

"Compute once, render many" (Optuna's plot ``_get_*_info`` habit): ``build_info`` turns trials.csv,
run.json and space.yaml into one immutable object; the CSV/YAML export, the plots and the HTML page only
read it, so every number is computed (and tested) in one place without drawing anything.

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
    Frontier,
    Headline,
    Objectives,
    TradeoffCurve,
    algorithm_effects,
    finite,
    frontier,
    hypervolume,
    hypervolume_vs_compute,
    interval_text,
    pairwise_interactions,
    reference_point,
    regime_recipes,
)
from recipesearch.errors import UserError
from recipesearch.plugins import add_search_dir, provenance_lines, user_code_dirs
from recipesearch.rundir import RunDir, normalise_trials

ACC, VAL_ACC, TIME, COST = "accuracy", "val_accuracy", "train_seconds", "cost"
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


@dataclass(frozen=True)
class Selection:
    """Which split the search chose on; the report's header states it, and warns when it was test."""

    metric: str  # the column selected on: "val_accuracy" or "accuracy" (test)
    val_fraction: float | None = None  # share of train held out for validation (the trials' data.val_fraction)

    @property
    def on_val(self) -> bool:
        return self.metric == VAL_ACC

    @property
    def label(self) -> str:
        """Column heading of the metric selected on."""
        return "val accuracy" if self.on_val else "test accuracy"

    @property
    def text(self) -> str:
        if not self.on_val:  # test accuracies picked as maxima of noisy numbers are biased upwards
            return "this run selected on the test split: its test accuracies are optimistic; use metric_split: val"
        held = f"{_percent(self.val_fraction)} of train held out" if self.val_fraction else "held out of train"
        return f"selected on validation ({held}); test accuracy is reported, never used to choose"


def _percent(fraction: float) -> str:
    """0.15 -> '15 %', 0.015 -> '1.5 %'."""
    return f"{100 * fraction:.3g} %"


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
    generated_at: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))

    @property
    def metric(self) -> str:
        """The accuracy column selected on ("val_accuracy" or "accuracy"); ``accuracy`` is always test."""
        return self.selection.metric

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
    metric = VAL_ACC if Objectives.from_run_meta(meta).metric_split == "val" else ACC
    required = [metric, *(o for o in meta.get("objectives") or () if o != ACC)]
    trials = run.read_trials(required) if rebuilt is None else normalise_trials(rebuilt)
    if notes or trial_notes:
        meta = {**meta, NOTES_KEY: [*notes, *trial_notes]}
    return RunFiles(trials, meta, space_text)


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


def _budget_curves(completed: pd.DataFrame, param_cols: list[str], metric: str = ACC) -> pd.DataFrame:
    """Mean metric, test accuracy and time per budget of the leading recipes tried at >= 2 budgets.

    Recipes are ranked by (has a frontier point, best metric): ranking chooses what is drawn, so it is on
    the metric selected on, never on test. The baseline is drawn separately.
    """
    accs = list(dict.fromkeys([metric, ACC]))  # the metric, then test accuracy when they differ
    columns = ["group", "label", "budget", *accs, TIME, "n", "on_front"]
    cand = completed[~completed["is_baseline"] & completed["budget"].notna()]
    if cand.empty:
        return pd.DataFrame(columns=columns)
    not_budget = [c for c in param_cols if not c.endswith("budget")]
    keys = cand.apply(lambda r: _group_key(r, not_budget), axis=1)
    ranked = []
    for key, g in cand.groupby(keys, sort=False):
        if g["budget"].nunique() >= 2:
            ranked.append((bool(g["on_front"].any()), float(g[metric].max()), -int(g["number"].min()), key, g))
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
            rows.append([rank, label, float(budget), *(float(b[c].mean()) for c in accs), float(b[TIME].mean()),
                         len(b), bool(b["on_front"].any())])
    return pd.DataFrame(rows, columns=columns)


def _fmt(x: float, spec: str) -> str:
    return format(x, spec) if isinstance(x, (int, float)) and np.isfinite(x) else "n/a"


_SPEEDUP_NOTE = {  # how the speedup line of a recipe's header reads, by status
    "interpolated": "{}x",
    "below_baseline": "at most {}x (less accurate than the shortest baseline run)",
    "beyond_baseline": "n/a (more accurate than any baseline run)",
    "no_baseline": "n/a (no baseline trial)",
}


def _seeds(row: pd.Series) -> int:
    """Seeds behind a frontier point (1 for a table without seed statistics)."""
    n = row.get("n_seeds")
    return int(n) if finite(n) else 1


def _plus_minus(row: pd.Series, col: str, low: str, high: str, spec: str) -> str:
    """'0.9500 +/- 0.0050' (mean and 95 % CI half-width) for a repeated point, '0.9500' for a single run.

    ASCII on purpose: recipe files are read back with the platform's default encoding."""
    text = _fmt(row.get(col, np.nan), spec)
    lo, hi = row.get(low, np.nan), row.get(high, np.nan)
    if _seeds(row) >= 2 and finite(lo) and finite(hi):
        text += f" +/- {format((float(hi) - float(lo)) / 2, spec)}"
    return text


def _measured(row: pd.Series, selection: Selection) -> str:
    """The accuracies of a recipe's provenance comment: the one selected on (mean +/- CI), then test as held out."""
    selected = _plus_minus(row, selection.metric, "accuracy_ci_low", "accuracy_ci_high", ".4f")
    if not selection.on_val:
        return f"accuracy {selected} (test split, also selected on)"
    return f"val_accuracy {selected} (selected on), test accuracy {_fmt(row[ACC], '.4f')} (held out)"


def _measured_line(row: pd.Series, selection: Selection) -> str:
    n = _seeds(row)
    over = (f"over {n} seeds (mean +/- 95% CI half-width)" if n >= 2
            else "on a single run (one seed: no interval)")
    return (f"measured at budget {_fmt(row['budget'], 'g')} {over}: {_measured(row, selection)}, train_seconds "
            f"{_plus_minus(row, TIME, 'train_seconds_ci_low', 'train_seconds_ci_high', '.2f')}; "
            f"algorithms: {row['algorithms'] or 'none'}")


def _point_speedup_line(row: pd.Series) -> str:
    if bool(row.get("is_baseline", False)):
        return "speedup at matched accuracy vs the baseline: n/a (this is the baseline recipe)"
    speed = _SPEEDUP_NOTE.get(str(row["speedup_status"]), "{}x ({})").format(
        _fmt(row["speedup"], ".2f"), str(row["speedup_status"]).replace("_", " "))
    if str(row["speedup_status"]) == "interpolated":
        if _seeds(row) < 2:  # one run: a bootstrap over it measures no noise, so no interval is stated
            speed += " (one seed: not confirmed)"
        elif bool(row.get("confirmed", False)):
            speed += interval_text(row.get("speedup_ci_low"), row.get("speedup_ci_high")) + \
                ", confirmed faster (interval above 1)"
        else:
            speed += interval_text(row.get("speedup_ci_low"), row.get("speedup_ci_high")) + " (not confirmed)"
    return f"speedup at matched accuracy vs the baseline at this point: {speed}"


def _curve_line(row: pd.Series, selection: Selection) -> str:
    """The recipe's tradeoff curve against the baseline's (CURVE_COLUMNS of the frontier row)."""
    if bool(row.get("is_baseline", False)):
        return "the baseline's tradeoff curve is what every speedup is measured against"
    budgets = row.get("curve_budgets", np.nan)
    if not finite(budgets):
        return "recipe curve: none (this recipe was trained at one budget only)"
    status, seeds = str(row.get("curve_status", "")), _curve_seeds(row)
    speed = (f"{_fmt(row['curve_speedup'], '.2f')}x" if finite(row.get("curve_speedup"))
             else f"n/a ({status.replace('_', ' ') or 'no speedup'})")
    if seeds >= 2 and finite(row.get("curve_speedup")):
        speed += interval_text(row["curve_ci_low"], row["curve_ci_high"])
    verdict = ("confirmed faster (interval above 1)" if bool(row.get("curve_confirmed", False)) else
               "not confirmed (one seed per budget)" if seeds < 2 else "not confirmed")
    label = "val acc" if selection.on_val else "test acc"
    return (f"recipe curve over {int(budgets)} budgets vs the baseline's: {speed} at {label} "
            f"{_fmt(row.get('curve_target', np.nan), '.4f')}, {seeds}+ seeds per budget; {verdict}")


def _curve_seeds(row: pd.Series) -> int:
    n = row.get("curve_seeds")
    return int(n) if finite(n) else 0


# Columns of a frontier row describing its recipe's curve (from Frontier.recipes, joined on recipe_key).
CURVE_COLUMNS = {"n_budgets": "curve_budgets", "n_seeds": "curve_seeds", "speedup": "curve_speedup",
                 "speedup_ci_low": "curve_ci_low", "speedup_ci_high": "curve_ci_high",
                 "speedup_status": "curve_status", "target_accuracy": "curve_target",
                 "confirmed": "curve_confirmed"}  # fmt: skip


def _with_curves(front: pd.DataFrame, recipes: pd.DataFrame) -> pd.DataFrame:
    """The frontier rows with their recipe's curve (CURVE_COLUMNS): NaN / '' / False without one."""
    out = front.copy()
    curves = recipes.set_index("recipe_key")[list(CURVE_COLUMNS)].rename(columns=CURVE_COLUMNS) \
        if len(recipes) and "recipe_key" in front else None
    for col in CURVE_COLUMNS.values():
        if curves is not None:
            out[col] = out["recipe_key"].map(curves[col])
        else:
            out[col] = np.nan
    out["curve_status"] = out["curve_status"].map(lambda v: v if isinstance(v, str) else "")
    out["curve_confirmed"] = out["curve_confirmed"].map(lambda v: bool(v) if isinstance(v, (bool, np.bool_)) else False)
    return out


def evidence(row: pd.Series | dict[str, Any]) -> str:
    """How far a frontier point's claim is confirmed, in a few words (regime table, recipe cards)."""
    row = pd.Series(row) if isinstance(row, dict) else row
    n = _seeds(row)
    if bool(row.get("is_baseline", False)):
        return f"baseline, {n} seed{'s' if n != 1 else ''}"
    if bool(row.get("curve_confirmed", False)):
        return (f"confirmed: curve {_fmt(row['curve_speedup'], '.2f')}x"
                f"{interval_text(row['curve_ci_low'], row['curve_ci_high'])} over {int(row['curve_budgets'])} budgets")
    if bool(row.get("confirmed", False)):
        ci = interval_text(row["speedup_ci_low"], row["speedup_ci_high"])
        return f"confirmed at this budget: {_fmt(row['speedup'], '.2f')}x{ci}"
    return f"not confirmed ({n} seeds)" if n >= 2 else "not confirmed (single run)"


def _front_recipes(
    front: pd.DataFrame, space_name: str, space_hash: str, run_dir: str | None, selection: Selection,
    user_code: list[dict[str, Any]] | None = None,
) -> tuple[FrontRecipe, ...]:
    """Validate each frontier point's recipe_json (its first run's) and render its YAML with provenance."""
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
        header = "\n".join([
            f"{RECIPE_MARKER} {rid}",
            f"trial {number} of search space '{space_name}' (space hash {space_hash})",
            _measured_line(row, selection),
            _point_speedup_line(row),
            _curve_line(row, selection),
            f"run: {run_dir or 'unknown'}",
            *provenance_lines(user_code),
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


def _val_fraction(trials: pd.DataFrame) -> float | None:
    """The share of train held out for validation, read from the trained recipes (data.val_fraction).

    The trials' recipe_json is what was actually trained, whatever default filled it in; space.yaml may
    name its base by a path relative to where it was written. The most common positive value wins.
    """
    values = []
    for text in trials.get("recipe_json", pd.Series(dtype=object)):
        try:
            data = json.loads(text) if isinstance(text, str) and text else None
        except json.JSONDecodeError:
            continue
        fraction = data.get("data", {}).get("val_fraction") if isinstance(data, dict) else None
        if isinstance(fraction, (int, float)) and fraction > 0:
            values.append(float(fraction))
    return max(set(values), key=values.count) if values else None


def _regimes(front: pd.DataFrame, budgets: tuple[float, ...], metric: str) -> pd.DataFrame:
    """Regime recipes picked on the metric from the frontier (confirmed points once confirmation ran), with
    the frontier's test accuracy, seeds, speedup, recipe and ``evidence`` (whether the claim is confirmed)."""
    shown = ["algorithms", "is_baseline", "speedup", "speedup_status", "speedup_ci_low", "speedup_ci_high",
             "confirmed", "recipe_id", "n_seeds", *CURVE_COLUMNS.values(), "evidence", "regime_confirmed"]
    if metric != ACC:
        shown.insert(0, ACC)  # test accuracy: shown next to the metric, never used to pick
    if not (len(front) and front["budget"].notna().any()):
        return pd.DataFrame(columns=["band", "label", "number", "budget", metric, TIME, *shown])
    front = front.assign(evidence=[evidence(r) for _, r in front.iterrows()],
                         regime_confirmed=front["confirmed"].astype(bool) | front["curve_confirmed"].astype(bool))
    regimes = regime_recipes(front[front["budget"].notna()], all_budgets=list(budgets), metric=metric)
    return regimes.join(front.set_index("number")[shown], on="number")


def pruning_note(trials: pd.DataFrame) -> str | None:
    """What stopping trials at rungs saved (scheduler: moasha), or None when nothing was stopped.

    A stopped trial trained ``pruned_at`` of its steps: had it gone on, it would have trained about
    ``train_seconds / pruned_at`` (steps cost alike along a run; progressive resizing's cheap early steps make
    this an underestimate, so the saving is a lower bound for those)."""
    pruned = trials[trials["state"].eq("PRUNED") & (trials["pruned_at"] > 0) & (trials["train_seconds"] > 0)]
    if pruned.empty:
        return None
    used = float(pruned["train_seconds"].sum())
    full = float((pruned["train_seconds"] / pruned["pruned_at"]).sum())
    trained = float(trials.loc[trials["state"].isin(["COMPLETE", "FAIL", "PRUNED"]), "train_seconds"].fillna(0).sum())
    saved = full - used
    proposals = int((trials["stage"] == "search").sum())
    rungs = float(trials["rung_seconds"].fillna(0).sum())
    return (f"scheduler: {len(pruned)} of {proposals} proposals stopped at a rung (MO-ASHA); they trained "
            f"{used:.0f} s instead of about {full:.0f} s: ~{saved:.0f} s saved, {saved / (trained + saved):.0%} of "
            f"the training time the search would have spent without stopping them. Rung evaluations took "
            f"{rungs:.0f} s (outside train_seconds).")


def repeats_note(trials: pd.DataFrame) -> str | None:
    """How many proposals repeated a recipe the search had trained or was training (the same params, budget and
    seed: engine/loop.py answers them without training), and the training time that spared; None: none did."""
    if "duplicate_of" not in trials or not trials["duplicate_of"].notna().any():
        return None
    repeats = trials["duplicate_of"].dropna().astype(int)
    # the repeated trials' own training time (a trial missing from the frame, or without a time, adds nothing)
    spared = float(trials.set_index("number")["train_seconds"].reindex(repeats).sum())
    proposals = int((trials["stage"] == "search").sum())
    return (f"repeats: {len(repeats)} of {proposals} proposals asked for a recipe already trained or in training "
            f"(the same parameters, budget and seed, so the same result); they were not trained again (~{spared:.0f} "
            f"s of training spared) and count in the trial budget.")


def simplify_note(meta: dict[str, Any]) -> str | None:
    """What the simplify stage decided (run.json's ``simplify``, engine/simplify.py), or None without one."""
    from recipesearch.analysis.simplify import Removal, verdicts_text

    s = meta.get("simplify")
    if not isinstance(s, dict):
        return None
    if s.get("step") != "pruned":  # nothing to simplify, or a search stopped during the ablation
        return f"simplify: nothing to simplify ({s['reason']})" if s.get("reason") else None
    verdicts = [Removal.from_dict(r) for r in s.get("removals") or [] if isinstance(r, dict)]
    budget = s.get("budget") if isinstance(s.get("budget"), (int, float)) else None
    share = s.get("share_of_train_seconds")
    cost = f" It took {share:.0%} of the search's training time." if isinstance(share, (int, float)) else ""
    return (f"simplify (without each method at one budget, seeds on the selection metric): "
            f"{verdicts_text(s.get('recipe'), budget, verdicts)}.{cost}")


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
    completed, baseline, curve = trials[done], f.baseline, f.baseline_curve
    front = _with_curves(f.front, f.recipes)
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
    selection = Selection(f.metric, _val_fraction(trials))
    budgets = tuple(sorted(float(b) for b in completed["budget"].dropna().unique()))
    regimes = _regimes(front, budgets, f.metric)
    effects = algorithm_effects(trials, front_mask=trials["on_front"], metric=f.metric)
    interactions = pairwise_interactions(trials, metric=f.metric)
    curves = _budget_curves(completed, param_cols, f.metric)

    # 6) replayable recipes of the frontier
    recipes = _front_recipes(front, space_name, space_hash, run_dir, selection, run_meta.get("user_code"))
    front["recipe_file"] = [r.filename or "" for r in recipes]
    front["recipe_id"] = [r.recipe_id or row for r, row in zip(recipes, front["recipe_id"], strict=True)]
    warnings += [f"trial {r.number}: {r.error}" for r in recipes if r.error]

    failed = trials[~done & trials["state"].isin(["FAIL", "COMPLETE"])].copy()  # PRUNED: stopped, not failed
    failed.loc[failed["state"].eq("COMPLETE") & failed["error"].eq(""), "error"] = \
        f"completed without a finite {f.metric} and positive train_seconds"
    hardware, versions = _meta_dicts(run_meta)
    # The header shows it; as a note too, so `recipesearch report` prints it with the other notes.
    warnings.insert(0, selection.text)
    warnings[1:1] = [note for note in (pruning_note(trials), repeats_note(trials)) if note]
    warnings[1:1] = [str(note) for note in run_meta.get("report_notes") or ()]  # what report/reconcile.py did
    simplified = simplify_note(run_meta)
    if simplified:
        warnings.append(simplified)
    return ReportInfo(
        run_dir=run_dir, space_name=space_name, space_hash=space_hash, space_text=space_text,
        objectives=objectives, directions=directions, selection=selection, param_columns=tuple(param_cols),
        trials=trials, completed=completed.reset_index(drop=True),
        failed=failed[["number", "state", "budget", "algorithms", "error"]].reset_index(drop=True),
        front=front, budgets=budgets, baseline=baseline, baseline_curve=curve, points=f.points,
        baseline_points=f.baseline_points, recipe_curves=f.recipes, frontier=f,
        confirmed_front=f.confirmed_front,
        reference=tuple(float(r) for r in ref), hypervolume=float(hv), hv_history=hv_history,
        headline=headline, regimes=regimes.reset_index(drop=True), effects=effects, interactions=interactions,
        budget_curves=curves, recipes=recipes, run_meta=run_meta, hardware=hardware, versions=versions,
        run_status=_run_status(trials, run_meta), warnings=tuple(warnings),
    )  # fmt: skip
