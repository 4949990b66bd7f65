"""Where §5's candidates and baseline come from: the newest search run on a dataset and its best recipes.

Part of the recipe_speedup benchmark (``bench/recipe_speedup.py``, whose docstring gives the method): reads a
search's ``trials.csv`` (``runs/**`` or the committed ``reports/examples/*``), picks its Pareto-front or
confirmed recipes as candidates, the plain baseline its speedups are stated against, and the hand-composed
set used when no search exists. ``bench/ablation.py`` and ``bench/gpu_extra.py`` take their recipe from here too.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bench.common import ROOT

if TYPE_CHECKING:
    from recipesearch.analysis import Objectives

MAX_CANDIDATES = 4
PLAIN_OPTIMIZERS = ("sgd", "adamw", "adam")  # what a plain baseline trains with (not muon, lookahead ...)

# Used only when no search run dir exists for the dataset. In the spirit of Composer's Mild/Medium/Hot
# ResNet recipes (more methods and a longer budget as you go), restricted to methods that pay on a CPU:
# channels_last and progressive resizing cut time per image (see the per-algorithm cost table), label
# smoothing / EMA / MixUp / SAM buy accuracy per epoch.
HAND_RECIPES = {
    "mild": {"budget": 0.5, "algorithms": {"channels_last": {}, "label_smoothing": {"smoothing": 0.1}}},
    "medium": {"budget": 0.5, "algorithms": {"channels_last": {}, "label_smoothing": {"smoothing": 0.1},
                                             "progressive_resizing": {}, "ema": {}}},
    "hot": {"budget": 1.0, "algorithms": {"channels_last": {}, "progressive_resizing": {}, "ema": {},
                                          "mixup": {"alpha": 0.2}, "sam": {"interval": 5}}},
}


def find_search_run(dataset: str, plain_base: bool = False) -> tuple[Path, Any] | None:
    """The newest search run dir on ``dataset`` and its completed trials (None when there is none);
    ``plain_base``: the newest whose baseline trials are a plain recipe (``is_plain``)."""
    best: tuple[float, Path, Any] | None = None
    # runs/ holds this machine's searches; reports/examples/ the committed ones, so a fresh clone has one
    for csv in [*(ROOT / "runs").glob("**/trials.csv"), *(ROOT / "reports" / "examples").glob("*/trials.csv")]:
        if str(csv.relative_to(ROOT)).startswith("runs/bench-"):
            continue  # the benchmarks' own short searches are not "the search's best recipes"
        ok = _completed(csv)
        if ok is None or json.loads(ok.iloc[0]["recipe_json"]).get("data", {}).get("name") != dataset:
            continue
        if plain_base and not _plain_baselines(ok):
            continue
        when = _started(ok, csv)
        if best is None or when > best[0]:
            best = (when, csv.parent, ok)
    return None if best is None else (best[1], best[2])


def is_plain(recipe: dict[str, Any]) -> bool:
    """A baseline in §5's sense: no speed-up algorithm and a plain optimizer. A search whose base is an earlier
    search's recipe (search_spaces/fashion_mnist_long.yaml) has no plain baseline of its own."""
    return not recipe.get("algorithms") and recipe.get("optimizer", {}).get("name") in PLAIN_OPTIMIZERS


def _plain_baselines(ok: Any) -> bool:
    """The search's baseline trials (``analysis.frontier``'s, as ``search_baselines`` reads them) are plain."""
    from recipesearch.analysis import Objectives, frontier

    rows = frontier(ok, Objectives()).baseline
    return not rows.empty and is_plain(json.loads(rows.iloc[0]["recipe_json"]))


def baseline_run(found: tuple[Path, Any], dataset: str, baseline_from: Path | None = None) -> tuple[Path, Any] | None:
    """The search whose baseline trials give the plain baseline's curve: ``baseline_from`` when given, else the
    candidates' own search (``found``), unless it refines an earlier search's recipe (its baselines are not
    plain): then the newest search on ``dataset`` whose baselines are."""
    if baseline_from is not None:
        return read_search_run(baseline_from)
    return found if _plain_baselines(found[1]) else find_search_run(dataset, plain_base=True)


def plain_baseline_curve(found: tuple[Path, Any], dataset: str, baseline_epochs: float,
                         baseline_from: Path | None = None) -> tuple[tuple[Path, Any] | None, dict[float, dict[str, Any]]]:
    """(the run it comes from, ``search_baselines``' curve) of the plain baseline for the candidates of ``found``
    (§5, and §8's and §10's arms); (None, {}) when no search on ``dataset`` has a plain baseline."""
    base = baseline_run(found, dataset, baseline_from)
    if base is None:
        return None, {}
    return base, search_baselines(base[1], baseline_epochs, search_objectives(base[0]))


def read_search_run(run_dir: Path) -> tuple[Path, Any]:
    """A given search run dir and its completed trials (``--baseline-from``); SystemExit when it has none."""
    ok = _completed(run_dir / "trials.csv")
    if ok is None:
        raise SystemExit(f"--baseline-from: {run_dir} has no trials.csv with completed trials")
    return run_dir.resolve(), ok


def _completed(csv: Path) -> Any:
    """The COMPLETE rows of a search's trials.csv (None when unreadable, or none completed with a recipe)."""
    import pandas as pd

    try:
        df = pd.read_csv(csv)
    except Exception:  # noqa: BLE001 - missing, or a half-written file of a running search
        return None
    ok = df[(df.get("state") == "COMPLETE")] if "state" in df else df.iloc[0:0]
    return None if ok.empty or "recipe_json" not in ok else ok


def relative_to_root(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _started(ok: Any, csv: Path) -> float:
    """When the search's last trial started (trials.csv's own dates; a checkout or a copy sets the files'
    modification times in no particular order); the file's time only for a table without dates."""
    import pandas as pd

    if "datetime_start" in ok:
        dates = pd.to_datetime(ok["datetime_start"], errors="coerce").dropna()
        if not dates.empty:
            return float(dates.max().timestamp())
    return csv.stat().st_mtime


def search_objectives(run_dir: Path) -> Objectives:
    """The search's objectives and selection metric from its run.json (``Objectives``' default without one)."""
    from recipesearch.analysis import Objectives

    try:
        meta = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        meta = {}
    return Objectives.from_run_meta(meta if isinstance(meta, dict) else {})


def _front(ok: Any, objectives: Objectives | None = None) -> Any:
    """The search's non-baseline Pareto front (``analysis.frontier``'s ``on_recipe_front``: the recipes'
    own front, so the most accurate recipe stays a candidate even when a baseline run beats it), with the
    metric the search selected on and the speedup (and status) it measured."""
    from recipesearch.analysis import Objectives, frontier

    f = frontier(ok, objectives or Objectives())
    front = f.trials[f.on_recipe_front].copy()
    front["search_metric"] = front[f.metric]
    front["search_speedup"], front["search_status"] = front["speedup"], front["speedup_status"]
    return front


def _label(row: Any, rec: dict[str, Any]) -> str:
    algs = row["algorithms"] if isinstance(row["algorithms"], str) and row["algorithms"] else "no algorithms"
    opt = rec.get("optimizer", {})
    return (f"trial {int(row['number'])}: {algs} @ budget {row['budget']:g} "
            f"(lr {opt.get('lr', float('nan')):g}, wd {opt.get('weight_decay', float('nan')):g}, "
            f"batch {rec.get('batch_size')})")


def front_candidates(ok: Any, objectives: Objectives | None = None) -> list[tuple[str, dict[str, Any]]]:
    """(label, recipe dict) of the front's best speedups and its most accurate point, fastest first."""
    front = _front(ok, objectives)
    if front.empty:
        return []
    speedup = front["search_speedup"].to_numpy(float)
    ranked = [i for i in np.argsort(-np.nan_to_num(speedup, nan=-np.inf)) if np.isfinite(speedup[i])]
    pick = set(ranked[:MAX_CANDIDATES - 1]) | {int(np.argmax(front["search_metric"].to_numpy(float)))}
    out = []
    for i in sorted(pick, key=lambda j: front.iloc[j]["train_seconds"]):
        row = front.iloc[i]
        rec = json.loads(row["recipe_json"])
        out.append((_label(row, rec), rec))
    return out


def longer_budget_arms(
    ok: Any, curve_budgets: list[float], objectives: Objectives | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """[(label, recipe dict)]: the search's best measured recipe as found, then at longer budgets.

    MosaicML judge a method by its tradeoff curve, not one point. The search's budgets stop short of the
    dataset's standalone baseline length, so its best recipe (the largest speedup it measured inside the
    baseline curve: a measurement, not a below-the-curve bound) is also trained, unchanged but for the
    budget (the schedule and progress-scheduled methods dilate with it), at the baseline curve's budgets
    from the search's longest on: with those points its own curve can reach the baseline's final
    accuracy, and the speedup there is read off both curves.
    """
    from recipesearch.analysis.speedup import INTERPOLATED

    front = _front(ok, objectives)
    if front.empty:
        return []
    measured = front[(front["search_status"] == INTERPOLATED) & np.isfinite(front["search_speedup"].to_numpy(float))]
    if measured.empty:
        return []
    row = measured.loc[measured["search_speedup"].idxmax()]
    rec = json.loads(row["recipe_json"])
    longest = float(ok["budget"].max())
    budgets = [b for b in curve_budgets if b >= longest - 1e-9 and b > float(row["budget"]) + 1e-9]
    name = _label(row, rec)
    trial = name.split(":")[0]
    return [(name, rec), *((f"{trial}'s recipe @ budget {b:g} (longer)", {**rec, "budget": b}) for b in budgets)]


def search_claims(run_dir: Path) -> tuple[Any, list[dict[str, Any]]]:
    """(frontier, confirmed claims as dicts): ``analysis.replication.claims_of`` on the run's trials."""
    from dataclasses import asdict

    from recipesearch.analysis.frontier import Objectives, frontier
    from recipesearch.analysis.replication import claims_of
    from recipesearch.rundir import RunDir

    run = RunDir(run_dir)
    f = frontier(run.read_trials(), Objectives.from_run_meta(run.read_meta()))
    return f, [{**asdict(c), "budgets": list(c.budgets), "ci": [c.ci_low, c.ci_high]} for c in claims_of(f)]


def recipe_of(f: Any, recipe_key: str) -> dict[str, Any]:
    """The recipe of ``recipe_key``'s first completed trial."""
    rows = f.completed_trials[f.completed_trials["recipe_key"] == recipe_key].sort_values("number")
    return json.loads(rows.iloc[0]["recipe_json"])


def confirmed_candidates(
    run_dir: Path, ok: Any, curve_budgets: list[float], objectives: Objectives | None = None
) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, list[str]]]:
    """([(label, recipe dict)], {curve name: labels}) from the search's *confirmed* frontier.

    The recipe whose confirmed tradeoff curve (or, where no curve was confirmed, confirmed front point) claims
    the largest speedup (re-trained by the search's
    confirmation stage with more seeds, selected on validation) at each budget of its curve and at the
    baseline curve's longer budgets, so that its curve reaches the longest baseline's accuracy; plus the
    front's most accurate recipe when it is another one. Empty when the run confirmed no curve (older runs):
    ``front_candidates`` and ``longer_budget_arms`` then pick from the unconfirmed front.
    """
    f, found = search_claims(run_dir)
    # a confirmed curve; else a confirmed point (its recipe, trained at every budget by the confirmation stage)
    pool = [c for c in found if c["kind"] == "curve"] or [c for c in found if c["kind"] == "point"]
    if not pool:
        return [], {}
    best = max(pool, key=lambda c: c["speedup"])
    rec = recipe_of(f, best["recipe_key"])
    trained = set(f.points.loc[f.points["recipe_key"] == best["recipe_key"], "budget"].astype(float))
    longest = max(trained | set(best["budgets"]))
    budgets = sorted(trained | set(best["budgets"]) | {b for b in curve_budgets if b > longest + 1e-9})
    trial = f"trial {best['number']}"
    labels = [f"{trial}'s recipe @ budget {b:g}" for b in budgets]
    cands = [(label, {**rec, "budget": b}) for label, b in zip(labels, budgets, strict=True)]
    front = _front(ok, objectives)
    if not front.empty:
        row = front.loc[front["search_metric"].astype(float).idxmax()]
        if row["recipe_key"] != best["recipe_key"]:
            cands.append((_label(row, json.loads(row["recipe_json"])), json.loads(row["recipe_json"])))
    where = "" if best["kind"] == "curve" else f" at budget {best['budgets'][0]:g}"
    name = (f"{trial}: {best['algorithms']} (search: confirmed {best['speedup']:.2f}x{where} "
            f"[{best['ci'][0]:.2f}–{best['ci'][1]:.2f}] at val accuracy {best['target']:.4f})")
    return cands, {name: labels}


def search_baselines(
    ok: Any, baseline_epochs: float, objectives: Objectives | None = None
) -> dict[float, dict[str, Any]]:
    """{budget: recipe dict}: the search's completed baseline trials (``analysis.frontier``'s baseline),
    plus one at half the shortest budget and one at ``baseline_epochs`` epochs.

    The long point is the search's base with the budget (and so the dilated schedule) that gives the
    dataset's standalone baseline length; it is skipped when the search already trains that long. The
    short point extends the curve below the search's cheapest baseline: the front's fastest recipes are
    usually less accurate than that, and without it their speedup is only a bound, not a measurement.
    """
    from recipesearch.analysis import Objectives, frontier

    rows = frontier(ok, objectives or Objectives()).baseline.sort_values("number", kind="stable")
    curve: dict[float, dict[str, Any]] = {}
    for _, row in rows.iterrows():
        curve.setdefault(float(row["budget"]), json.loads(row["recipe_json"]))
    if not curve:
        return curve
    longest = max(curve)
    base = curve[longest]
    per_budget = float(base["max_duration"])  # epochs at budget 1
    if longest * per_budget < baseline_epochs - 1e-9:
        curve[baseline_epochs / per_budget] = {**base, "budget": baseline_epochs / per_budget}
    shortest = min(curve)
    curve[shortest / 2] = {**curve[shortest], "budget": shortest / 2}
    return dict(sorted(curve.items()))


def hand_candidates(base: Any) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for name, spec in HAND_RECIPES.items():
        data = base.to_dict()
        data.update(name=name, budget=spec["budget"], algorithms=spec["algorithms"])
        label = f"{name}: {'+'.join(sorted(spec['algorithms']))} @ budget {spec['budget']:g}"
        out.append((label, data))
    return out
