"""Replication: do the confirmed speedups of a search hold up on seeds the search never used?

For each finished search run directory (the digits and Fashion-MNIST spaces by default), every confirmed
claim of its frontier (``analysis.frontier``: recipe curves whose curve-vs-curve speedup has a bootstrap
interval above 1, and confirmed front points) is retrained with ``--seeds`` fresh seeds (recipe seed =
the space's seed + 1000 + k: never a seed index of the search) at every budget the claim needs, next to
the baseline at every budget with the same fresh seeds, two trials at a time as the search runs them.
The fresh runs are scored on **test**, the split the search never chose on:

- a curve claim's fresh speedup is ``curve_speedup`` of the fresh per-budget test means, at the highest
  test accuracy both fresh curves reach; a point claim's is the fresh point's test mean on the fresh
  baseline curve;
- *inside* means the fresh speedup lies within the interval the search reported (on validation);
- the headline's fresh speedup, and the confirmation stage's share of the search's training time, are
  reported as well. Goal: >= 80 % of confirmed speedups inside their interval.

    python -m bench.replication                       # digits: search it now; Fashion-MNIST: runs/fm-new if present
    python -m bench.replication --runs RUN_DIR [...]  # replicate finished searches
    python -m bench.run_all --only replication [--quick]
"""
from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.common import ROOT, environment, fmt, md_table, save_result

NAME = "replication"
TITLE = "Replication: confirmed speedups retrained with fresh seeds, scored on test"
SEED_OFFSET = 1000  # fresh seed indices start here: the search uses 0, 1, 2 ...
GOAL_INSIDE = 0.80
DEFAULT_RUNS = {"digits": ROOT / "search_spaces/digits.yaml", "fashion_mnist": ROOT / "search_spaces/fashion_mnist.yaml"}
FM_RUN = ROOT / "runs/fm-new"  # the Fashion-MNIST search behind reports/examples/fashion_mnist


def _train(job: dict[str, Any]) -> dict[str, Any]:
    """One fresh run in a worker process (one torch thread, as a search trial)."""
    from recipesearch.engine.trial import run_recipe

    out = run_recipe({"number": job["key"], "recipe": job["recipe"], "error": None, "threads": 1})
    return {**{k: job[k] for k in ("claim_key", "budget", "seed")},
            **{k: out.get(k) for k in ("accuracy", "val_accuracy", "train_seconds", "error")}}


def claims(run_dir: Path) -> tuple[Any, list[dict[str, Any]]]:
    """(frontier, confirmed claims): recipe curves and front points whose speedup was confirmed."""
    from recipesearch.analysis.frontier import Objectives, frontier
    from recipesearch.rundir import RunDir

    run = RunDir(run_dir)
    f = frontier(run.read_trials(), Objectives.from_run_meta(run.read_meta()))
    out = []
    for _, r in f.recipes[f.recipes["confirmed"]].iterrows() if len(f.recipes) else []:
        budgets = sorted(f.points.loc[f.points["recipe_key"] == r["recipe_key"], "budget"].astype(float))
        out.append({"kind": "curve", "recipe_key": r["recipe_key"], "number": int(r["number"]),
                    "algorithms": r["algorithms"], "budgets": budgets, "speedup": float(r["speedup"]),
                    "ci": [float(r["speedup_ci_low"]), float(r["speedup_ci_high"])],
                    "target": float(r["target_accuracy"])})
    for _, p in f.front[f.front["confirmed"].astype(bool)].iterrows() if len(f.front) else []:
        out.append({"kind": "point", "recipe_key": p["recipe_key"], "number": int(p["number"]),
                    "algorithms": p["algorithms"], "budgets": [float(p["budget"])], "speedup": float(p["speedup"]),
                    "ci": [float(p["speedup_ci_low"]), float(p["speedup_ci_high"])], "target": float(p[f.metric])})
    return f, out


def recipe_of(f: Any, recipe_key: str) -> dict[str, Any]:
    rows = f.completed_trials[f.completed_trials["recipe_key"] == recipe_key].sort_values("number")
    return json.loads(rows.iloc[0]["recipe_json"])


def replicate(run_dir: Path, seeds: int, concurrency: int = 2,
              train: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """Retrain the run's confirmed claims and its baseline with fresh seeds; compare on test.

    ``train(jobs) -> results`` runs the jobs (default: ``concurrency`` worker processes, ``_train`` each)."""
    from recipesearch.analysis.frontier import BASELINE_KEY

    f, found = claims(run_dir)
    meta = json.loads((run_dir / "run.json").read_text())
    trials = pd.read_csv(run_dir / "trials.csv")
    secs = pd.to_numeric(trials["train_seconds"], errors="coerce").fillna(0.0)
    confirm_share = float(secs[trials.get("stage", pd.Series(dtype=str)) == "confirm"].sum() / secs.sum()) \
        if secs.sum() > 0 else math.nan
    result: dict[str, Any] = {"run_dir": str(run_dir), "space": meta.get("space_name") or meta.get("space"),
                              "verdict": f.headline.verdict, "confirm_share": confirm_share, "claims": found}
    if not found:
        return {**result, "runs": [], "inside_share": math.nan}

    # what to train: the baseline at all its budgets, each claimed recipe at the budgets its claim needs
    base_budgets = sorted(f.baseline_points["budget"].astype(float))
    need: dict[str, set[float]] = {BASELINE_KEY: set(base_budgets)}
    for c in found:
        need.setdefault(c["recipe_key"], set()).update(c["budgets"])
    jobs = []
    for key, budgets in need.items():
        recipe = recipe_of(f, key)
        for budget in sorted(budgets):
            for k in range(seeds):
                fresh = {**recipe, "budget": budget, "seed": int(recipe.get("seed", 0)) + SEED_OFFSET + k}
                jobs.append({"key": len(jobs), "claim_key": key, "budget": budget, "seed": fresh["seed"],
                             "recipe": fresh})
    start = time.perf_counter()
    if train is None:
        with ProcessPoolExecutor(max_workers=concurrency) as pool:
            runs = pd.DataFrame(list(pool.map(_train, jobs)))
    else:
        runs = pd.DataFrame(train(jobs))
    result.update(runs=runs.to_dict(orient="records"), wall_seconds=time.perf_counter() - start, seeds=seeds,
                  headline={"number": f.headline.number, "speedup": f.headline.speedup,
                            "ci": [f.headline.speedup_ci_low, f.headline.speedup_ci_high],
                            "n_budgets": f.headline.n_budgets})
    return score(result)


def score(result: dict[str, Any]) -> dict[str, Any]:
    """Each claim's fresh speedup from the fresh runs (``result["runs"]``), and whether it is inside the
    interval the search reported. Separate from the training so saved runs can be scored again."""
    from recipesearch.analysis import curve_speedup, speedups_at_matched_accuracy
    from recipesearch.analysis.frontier import BASELINE_KEY

    runs = pd.DataFrame(result["runs"])
    ok = runs[runs["error"].isna() & np.isfinite(runs["train_seconds"].astype(float))]

    def means(key: str, col: str) -> pd.DataFrame:
        return ok[ok["claim_key"] == key].groupby("budget")[[col, "train_seconds"]].mean().sort_index()

    for c in result["claims"]:
        for col, label in (("accuracy", "test"), ("val_accuracy", "val")):
            base, mine = means(BASELINE_KEY, col), means(c["recipe_key"], col)
            if c["kind"] == "curve":
                mine = mine.loc[[b for b in c["budgets"] if b in mine.index]]
                value = curve_speedup(mine["train_seconds"], mine[col], base["train_seconds"], base[col]).speedup
            elif c["budgets"][0] in mine.index:  # the fresh point at the claim's own budget
                point = mine.loc[[c["budgets"][0]]]
                s = speedups_at_matched_accuracy(point["train_seconds"], point[col], base["train_seconds"], base[col])
                value = float(s.speedup[0])
            else:
                value = math.nan
            c[f"fresh_speedup_{label}"] = float(value)
        low, high = c["ci"]
        c["inside"] = bool(math.isfinite(c["fresh_speedup_test"]) and low <= c["fresh_speedup_test"] <= high)
    h = result.get("headline") or {}
    head = next((c for c in result["claims"] if c["number"] == h.get("number")
                 and (c["kind"] == "curve") == (h.get("n_budgets", 2) >= 2)), None)
    if h:
        h["fresh_speedup_test"] = head["fresh_speedup_test"] if head else math.nan
    result["inside_share"] = float(np.mean([c["inside"] for c in result["claims"]])) if result["claims"] else math.nan
    return result


def _search(space: Path, out: Path) -> Path:
    from recipesearch.engine.api import search

    return search(space, out=out, quiet=True, report=False).run_dir.root


def run(quick: bool = False, runs: list[str] | None = None, seeds: int = 3) -> dict[str, Any]:
    env = environment()
    dirs: list[Path] = [Path(r) for r in runs or []]
    if not dirs:
        out = ROOT / "runs" / f"bench-replication-digits-{time.strftime('%Y%m%d-%H%M%S')}"
        dirs.append(_search(DEFAULT_RUNS["digits"], out))
        if not quick:
            dirs.append(FM_RUN if (FM_RUN / "trials.csv").is_file() else
                        _search(DEFAULT_RUNS["fashion_mnist"], FM_RUN))
    spaces = [replicate(d, seeds) for d in dirs]
    return summarise({"name": NAME, "quick": quick, "environment": env,
                      "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "searches": spaces, "goal": GOAL_INSIDE})


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    found = [c for s in result["searches"] for c in s["claims"] if "inside" in c]
    share = float(np.mean([c["inside"] for c in found])) if found else math.nan
    return {**result, "inside_share": share, "goal_met": bool(found and share >= GOAL_INSIDE)}


def claim_rows(search: dict[str, Any]) -> list[list[str]]:
    """One row per confirmed claim of a search: what it is, its reported speedup and interval, its fresh speedups,
    and whether the fresh test speedup is inside the interval."""
    return [[c["kind"], str(c["number"]), c["algorithms"] or "–", ", ".join(f"{b:g}" for b in c["budgets"]),
             f"{fmt(c['speedup'], '.2f')}x [{fmt(c['ci'][0], '.2f')}–{fmt(c['ci'][1], '.2f')}]",
             f"{fmt(c.get('fresh_speedup_test'), '.2f')}x", f"{fmt(c.get('fresh_speedup_val'), '.2f')}x",
             "yes" if c.get("inside") else "no"]
            for c in search["claims"]]


def render(result: dict[str, Any]) -> str:
    lines = [
        "Every confirmed claim of a search (recipe curves and front points whose bootstrap interval over "
        "seeds is above 1, chosen on validation) retrained with seeds the search never used, next to the "
        "baseline with the same fresh seeds, and scored on test. *Inside*: the fresh test speedup lies in "
        "the interval the search reported. Goal: ≥ 80 % inside.",
        "",
    ]
    for s in result["searches"]:
        lines += [f"**{s['space']}** (`{s['run_dir']}`): {s['verdict']}",
                  "",
                  f"Confirmation stage: {fmt(100 * s['confirm_share'], '.0f')} % of the search's training time.",
                  ""]
        if not s["claims"]:
            lines += ["No confirmed claim to replicate.", ""]
            continue
        lines.append(md_table(["claim", "trial", "algorithms", "budgets", "reported speedup [95 % CI] (val)",
                               "fresh (test)", "fresh (val)", "inside"], claim_rows(s)))
        h = s.get("headline") or {}
        if h.get("number") is not None:
            lines += ["", f"Headline (trial {h['number']}): reported {fmt(h['speedup'], '.2f')}x "
                          f"[{fmt(h['ci'][0], '.2f')}–{fmt(h['ci'][1], '.2f')}], fresh seeds on test "
                          f"{fmt(h['fresh_speedup_test'], '.2f')}x."]
        lines.append("")
    if result.get("note"):
        lines += [f"Note: {result['note']}", ""]
    share = result.get("inside_share", math.nan)
    met = "met" if result.get("goal_met") else "not met"
    lines.append(f"**Inside the reported interval: {fmt(100 * share, '.0f')} % of the confirmed speedups "
                 f"(goal ≥ {100 * GOAL_INSIDE:.0f} %: {met}).**")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", nargs="*", help="finished search run directories (default: search digits now)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="digits only")
    p.add_argument("--rescore", action="store_true", help="score the saved fresh runs again (no training)")
    p.add_argument("--note", help="conditions worth knowing (e.g. a search that shared its machine), shown as is")
    args = p.parse_args(argv)
    if args.rescore:
        from bench.common import load_result

        saved = load_result(NAME)
        if saved is None:
            p.error("no saved results to rescore: run the benchmark first")
        result = summarise({**saved, "searches": [score(s) if s.get("runs") else s for s in saved["searches"]]})
    else:
        result = run(quick=args.quick, runs=args.runs, seeds=args.seeds)
    if args.note:
        result["note"] = args.note
    save_result(NAME, result)
    print(render(result))


if __name__ == "__main__":
    main()
