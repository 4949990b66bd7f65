"""Files a user takes away from a run: ``pareto.csv`` and one replayable ``recipes/<id>.yaml`` per frontier point.

A frontier point is a recipe at one budget measured over its seeds (``analysis.frontier``): pareto.csv
gives the seed means with their 95 % intervals, and each recipe file's comments say the same (mean +/- CI
half-width, seeds, held-out test mean, the recipe curve's speedup with its interval and whether it is
confirmed).

Recipe files are full recipes (validated with ``recipe_from_dict``, written with ``dump_recipe``) whose
leading comments record where they came from, so ``recipesearch train recipes/<id>.yaml`` replays one
as is. ``export_recipes`` backs ``recipesearch export RUN_DIR --to DIR``.
"""
from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from recipesearch.analysis.points import SPEEDUP_CI_COLUMNS, seed_columns
from recipesearch.errors import UserError
from recipesearch.report.front_recipes import RECIPE_MARKER, FrontRecipe
from recipesearch.report.info import ReportInfo
from recipesearch.report.writing import read_or_none, write_together
from recipesearch.rundir import write_atomic
from recipesearch.trials_columns import ACCURACY, COST, TIME, VAL_ACCURACY

# Columns of pareto.csv, then ``seed_columns(metric)``, then PARETO_TAIL_COLUMNS and the sampled parameters
# (params_*). One row per frontier point: a recipe at one budget, its first run's number, recipe and
# measurements with accuracy (test), val_accuracy, train_seconds and cost replaced by the means over its seeds.
# The seed statistics name their split: <split>_accuracy_mean / _ci_low / _ci_high of the metric the search
# selected on (val_ or test_), and test_accuracy_mean (the held-out test mean of a validation search);
# speedup_ci_* / confirmed: the point's bootstrap interval against the baseline curve; curve_*: its recipe's
# tradeoff curve against the baseline's (empty when the recipe was trained at one budget).
PARETO_HEAD_COLUMNS = (
    "number", ACCURACY, TIME, COST, "budget", "algorithms", "speedup", "speedup_status",
    "baseline_seconds", "accuracy_gain", "is_baseline", "recipe_id", "recipe_file", "epochs",
    "throughput", "data_wait_fraction", "eval_seconds", VAL_ACCURACY, "seed",
)  # fmt: skip
PARETO_TAIL_COLUMNS = (*SPEEDUP_CI_COLUMNS, "curve_budgets", "curve_speedup", "curve_ci_low", "curve_ci_high",
                       "curve_confirmed")


def pareto_columns(metric: str) -> list[str]:
    """pareto.csv's columns (before params_*) for a search that selected on ``metric``."""
    return [*PARETO_HEAD_COLUMNS, *seed_columns(metric), *PARETO_TAIL_COLUMNS]


def pareto_frame(info: ReportInfo) -> pd.DataFrame:
    """The frontier points (fastest first) with the columns of pareto.csv."""
    cols = pareto_columns(info.metric) + list(info.param_columns)
    return info.front.reindex(columns=cols)


def pareto_csv_text(info: ReportInfo) -> str:
    buf = io.StringIO()
    pareto_frame(info).to_csv(buf, index=False)
    return buf.getvalue()


def write_pareto_csv(info: ReportInfo, run_dir: str | Path) -> Path:
    return write_atomic(Path(run_dir) / "pareto.csv", pareto_csv_text(info))


def unique_recipes(info: ReportInfo) -> list[FrontRecipe]:
    """One recipe per recipe id (two frontier trials of the same recipe share a file; the fastest names it)."""
    seen, out = set(), []
    for r in info.recipes:
        if r.yaml_text is not None and r.recipe_id not in seen:
            seen.add(r.recipe_id)
            out.append(r)
    return out


def _ours(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.readline().startswith(f"# {RECIPE_MARKER}")
    except OSError:
        return False


def recipe_files(info: ReportInfo, run_dir: str | Path) -> dict[Path, str]:
    """recipes/<id>.yaml -> its text for each frontier recipe (``unique_recipes``)."""
    folder = Path(run_dir) / "recipes"
    return {folder / f"{r.recipe_id}.yaml": r.yaml_text or "" for r in unique_recipes(info)}  # never None there


def changed_files(files: dict[Path, str]) -> dict[Path, str]:
    """Those of ``files`` whose target does not hold that text already (an unchanged file is not rewritten)."""
    return {path: text for path, text in files.items() if read_or_none(path) != text}


def remove_stale_recipes(run_dir: str | Path, keep: list[Path]) -> None:
    """Remove recipes/*.yaml files this report wrote for trials that left the frontier (not the user's)."""
    folder = Path(run_dir) / "recipes"
    if not folder.is_dir():
        return
    names = {p.name for p in keep}
    for stale in folder.glob("*.yaml"):
        if stale.name not in names and _ours(stale):
            try:
                stale.unlink(missing_ok=True)
            except OSError as exc:
                raise UserError(f"{stale}: cannot remove this recipe, which left the frontier "
                                f"({exc.strerror or exc}); delete it by hand") from None


def write_recipes(info: ReportInfo, run_dir: str | Path) -> list[Path]:
    """Write recipes/<id>.yaml for the frontier and remove the ones that fell off it (only files we wrote)."""
    files = recipe_files(info, run_dir)
    for path, text in changed_files(files).items():
        write_atomic(path, text)
    remove_stale_recipes(run_dir, list(files))
    return list(files)


def export_recipes(run_dir: str | Path, to_dir: str | Path, force: bool = False,
                   info: ReportInfo | None = None) -> list[Path]:
    """Copy the frontier recipes of a run to ``to_dir``; existing different files need ``force``.

    Nothing is written when any target conflicts, so a refused export leaves ``to_dir`` as it was; the recipes
    are written together (``report/writing.py``), so one that cannot be written (``--to`` on a read-only mount,
    ``/proc/x``) is a one-line UserError naming ``--to`` that leaves ``to_dir`` as it was too.
    """
    from recipesearch.report.info import build_info, load_run

    if info is None:  # ``info``: the run's, already built from load_run (the export command prints its notes)
        info = build_info(*load_run(run_dir), run_dir=run_dir)
    recipes = unique_recipes(info)
    if not recipes:
        why = "no completed trials" if info.completed.empty else "no frontier trial has a replayable recipe_json"
        raise UserError(f"{Path(run_dir) / 'trials.csv'}: {why}; nothing to export")
    to_dir = Path(to_dir)
    if to_dir.exists() and not to_dir.is_dir():
        raise UserError(f"--to: {to_dir} exists and is not a directory")
    targets = {to_dir / f"{r.recipe_id}.yaml": r.yaml_text or "" for r in recipes}
    blocked = [p for p in targets if p.exists() and not p.is_file()]
    if blocked:
        raise UserError(f"--to: {blocked[0]} exists and is not a file")
    changed = changed_files(targets)
    conflicts = [p for p in changed if p.exists()]
    if conflicts and not force:
        more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
        raise UserError(f"--to: {conflicts[0]} exists with different content{more}; pass --force to overwrite")

    def describe(path: Path, reason: str) -> str:
        what = "create the folder" if path == to_dir or path in to_dir.parents else "write"
        return f"--to: cannot {what} {path} ({reason}); nothing was exported: choose a folder you can write to"

    write_together(changed, describe)  # every recipe or none
    return list(targets)
