"""Search efficiency: hypervolume against cumulative training time for tpe, nsga2, gp, random and sweep.

Two parts, both reported:
A) Real searches: ``recipesearch.engine.api.search`` on ``search_spaces/digits.yaml`` with the sampler
   swapped, ``SEEDS_REAL`` seeds each (trials really train, through Ray). Trials are taken in completion
   order; cumulative training time = running sum of their train_seconds (compute, not wall time:
   concurrency does not flatter a sampler). One reference point for every run: ``reference_point`` of
   the union of all completed trials.
B) Replay (``bench/replay.py``): a discrete digits space (budgets x algorithm switches at their defaults)
   whose every recipe was trained once and recorded in ``reports/bench/replay_table_digits*.csv``; each
   sampler searches that table with >= 10 seeds, the same trial count and concurrency as a real search.
   Exact lookups (every proposal is in the table). Hypervolume is normalised by the table's own (the
   best any search of that space can reach).
Headline: the cumulative training time each sampler needs to reach the final hypervolume of random
search (median over random's seeds), as the median over its seeds, and as a ratio to random's own.
"""
from __future__ import annotations

import argparse
import json
import math
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import (
    BENCH_DIR,
    ROOT,
    environment,
    fmt,
    fmt_summary,
    load_now,
    md_table,
    save_figure,
    summarize,
)

NAME = "search_efficiency"
TITLE = "Search efficiency: hypervolume vs cumulative training time per sampler (real runs + replay)"
SAMPLERS = ("tpe", "nsga2", "gp", "random", "sweep")
DIGITS_SPACE = ROOT / "search_spaces" / "digits.yaml"
BASE_RECIPE = ROOT / "recipes" / "digits_baseline.yaml"
RUNS_DIR = ROOT / "runs" / "bench-search"

# The replay grid: every recipe of this discrete space is trained once and recorded.
GRID = {"budgets": [0.25, 0.5, 1.0], "algorithms": ["channels_last", "progressive_resizing", "blurpool", "mixup", "ema"]}
GRID_QUICK = {"budgets": [0.25, 0.5, 1.0], "algorithms": ["channels_last", "progressive_resizing", "mixup"]}
DIRECTIONS = ("maximize", "minimize")


# A) real searches ---------------------------------------------------------------------------------------


def real_space(sampler: str, seed: int, quick: bool) -> Any:
    """digits.yaml with the sampler swapped (quick: budgets 0.25 and 0.5 only, 10 trials)."""
    import yaml

    from recipesearch.space import space_from_dict

    data = yaml.safe_load(DIGITS_SPACE.read_text())
    options = {k: v for k, v in (data.get("sampler") or {}).items() if k not in ("name", "seed")}
    data["sampler"] = {"name": sampler, "seed": seed, **(options if sampler == data["sampler"]["name"] else {})}
    data["name"] = f"bench-{sampler}-{seed}"
    if quick:
        data["budgets"], data["trials"] = [0.25, 0.5], 10
    # Search efficiency compares the proposal stage: one baseline run per budget, no confirmation.
    data["baseline"], data["confirm"] = {"seeds": 1}, False
    return space_from_dict(data, source=str(DIGITS_SPACE), base_dir=DIGITS_SPACE.parent)


def run_real(samplers: tuple[str, ...], seeds: list[int], quick: bool) -> list[dict[str, Any]]:
    import pandas as pd

    from recipesearch.engine.api import search

    runs = []
    for seed in seeds:
        for sampler in samplers:  # samplers interleaved within a seed: load drifts hit all alike
            space = real_space(sampler, seed, quick)
            out = RUNS_DIR / f"{'quick-' if quick else ''}{sampler}-{seed}"
            print(f"  real search: {sampler} seed {seed} -> {out}", flush=True)
            t0 = time.time()
            try:
                df = search(space, out=out, force=True, quiet=True).trials
            except Exception as exc:  # noqa: BLE001 - record and go on with the other samplers
                runs.append({"sampler": sampler, "seed": seed, "error": f"{type(exc).__name__}: {exc}"[:300]})
                continue
            wall = time.time() - t0
            df = df.copy()
            df["_end"] = pd.to_datetime(df["datetime_complete"])
            df = df.sort_values(["_end", "number"])
            trials = [{"number": int(r.number), "state": r.state,
                       "accuracy": float(r.accuracy) if r.state == "COMPLETE" else math.nan,
                       "train_seconds": float(r.train_seconds) if pd.notna(r.train_seconds) else math.nan,
                       "algorithms": r.algorithms if isinstance(r.algorithms, str) else "",
                       "budget": float(r.budget) if pd.notna(r.budget) else math.nan}
                      for r in df.itertuples()]
            runs.append({"sampler": sampler, "seed": seed, "wall_seconds": wall, "trials": trials,
                         "run_dir": str(out.relative_to(ROOT)), "load": load_now()})
    return runs


def _curve_points(trials: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    pts = np.array([[t["accuracy"], t["train_seconds"]] for t in trials], dtype=float).reshape(-1, 2)
    return pts, np.nan_to_num(pts[:, 1], nan=0.0)


# B) the recorded table ----------------------------------------------------------------------------------


def grid_space(quick: bool) -> Any:
    from bench.replay import grid_space as make

    g = GRID_QUICK if quick else GRID
    return make(BASE_RECIPE, g["budgets"], g["algorithms"], name="digits-replay-grid" + ("-quick" if quick else ""),
                trials=26, concurrency=2, threads=1, sampler={"name": "tpe", "seed": 0, "n_startup_trials": 8})


def table_path(quick: bool) -> Path:
    return BENCH_DIR / f"replay_table_digits{'_quick' if quick else ''}.csv"


def _train_one(recipe: dict[str, Any]) -> dict[str, Any]:
    """Worker: train one recipe with one thread (like a search trial at concurrency 2)."""
    import torch

    from recipesearch.recipe import recipe_from_dict
    from recipesearch.train.loop import fit

    torch.set_num_threads(1)
    try:
        r = fit(recipe_from_dict(recipe))
    except Exception as exc:  # noqa: BLE001
        return {"accuracy": math.nan, "train_seconds": math.nan, "error": f"{type(exc).__name__}: {exc}"[:200]}
    return {"accuracy": r.accuracy, "train_seconds": r.train_seconds, "throughput": r.throughput,
            "recipe_id": r.recipe_id, "error": ""}


def record_table(space: Any, path: Path) -> dict[str, Any]:
    """Train every recipe of the discrete ``space`` (2 processes, 1 thread each) and write the table CSV."""
    import multiprocessing as mp

    from bench.replay import TrialRecord, enumerate_space, write_table

    grid = enumerate_space(space)
    recipes = [space.recipe_for(p).to_dict() for p in grid]
    print(f"  recording the replay table: {len(grid)} recipes, 2 processes x 1 thread -> {path}", flush=True)
    t0 = time.time()
    with ProcessPoolExecutor(max_workers=2, mp_context=mp.get_context("spawn")) as pool:
        results = list(pool.map(_train_one, recipes))
    records = [TrialRecord(i, p, r["accuracy"], r["train_seconds"], "COMPLETE" if not r["error"] else "FAIL")
               for i, (p, r) in enumerate(zip(grid, results))]
    extra = {i: {"recipe_id": r.get("recipe_id", ""), "throughput": r.get("throughput", math.nan),
                 "error": r["error"], "recipe_json": json.dumps(rec)} for i, (r, rec) in enumerate(zip(results, recipes))}
    write_table(records, path, extra)
    meta = {"space_hash": space.hash, "recipes": len(grid), "wall_seconds": time.time() - t0,
            "train_seconds_total": float(np.nansum([r["train_seconds"] for r in results])),
            "failed": int(sum(bool(r["error"]) for r in results)), "environment": environment(),
            "recorded": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    path.with_suffix(".json").write_text(json.dumps(meta, indent=1))
    return meta


def load_or_record(quick: bool, rerecord: bool = False) -> tuple[bool, Any, Any, dict[str, Any]]:
    """(quick table?, space, table, meta): the full table when it exists (quick mode too), else record."""
    from bench.replay import Table

    use_quick = quick and not (table_path(False).exists() and not rerecord)
    space, path = grid_space(use_quick), table_path(use_quick)
    meta_path = path.with_suffix(".json")
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else None
    if rerecord or meta is None or meta.get("space_hash") != space.hash or not path.exists():
        meta = record_table(space, path)
    return use_quick, space, Table.read_csv(path, space), {**meta, "path": str(path.relative_to(ROOT))}


_TABLES: dict[bool, tuple[Any, Any]] = {}


def _replay_job(job: tuple[bool, str, int, int]) -> tuple[list[dict[str, Any]], float, float]:
    """Worker: one sampler, one seed, against the table (loaded once per process)."""
    import torch

    from bench.replay import Table, replay

    quick_table, sampler, seed, n_trials = job
    torch.set_num_threads(1)
    if quick_table not in _TABLES:
        space = grid_space(quick_table)
        _TABLES[quick_table] = (space, Table.read_csv(table_path(quick_table), space))
    space, table = _TABLES[quick_table]
    options = {"n_startup_trials": 8} if sampler == "tpe" else None
    t0 = time.perf_counter()
    recs, hit = replay(space, table, sampler, seed, n_trials, concurrency=space.concurrency, options=options)
    runs = [{"accuracy": r.accuracy, "train_seconds": r.train_seconds, "state": r.state, "params": r.params}
            for r in recs]
    return runs, hit, time.perf_counter() - t0


def run_replay(quick_table: bool, seeds: int, n_trials: int) -> dict[str, Any]:
    """Every sampler x seed against the table, in 2 processes (GP's model fits dominate the cost)."""
    import multiprocessing as mp

    jobs = [(quick_table, s, seed, n_trials) for s in SAMPLERS for seed in range(seeds)]
    with ProcessPoolExecutor(max_workers=2, mp_context=mp.get_context("spawn")) as pool:
        results = list(pool.map(_replay_job, jobs))
    out: dict[str, Any] = {}
    for (_, sampler, _, _), (runs, hit, secs) in zip(jobs, results):
        o = out.setdefault(sampler, {"runs": [], "hits": [], "seconds": 0.0})
        o["runs"].append(runs)
        o["hits"].append(hit)
        o["seconds"] += secs
    for sampler, o in out.items():
        o["hit_rate"] = float(np.mean(o.pop("hits")))
        print(f"  replay {sampler}: {seeds} seeds x {n_trials} trials, {o['seconds']:.1f} s of sampler compute", flush=True)
    return out


def sampler_notes(n_trials: int, n_baselines: int, rep: dict[str, Any]) -> list[str]:
    """Facts about the samplers' settings (and what the replay showed) that explain a short search."""
    import optuna

    notes = []
    pop = optuna.samplers.NSGAIISampler().population_size
    if "nsga2" in rep and "random" in rep and n_trials - n_baselines <= pop:
        same = rep["nsga2"]["runs"] == rep["random"]["runs"]
        notes.append(f"nsga2: Optuna's default population is {pop} and only {n_trials - n_baselines} trials are "
                     "sampled, so NSGA-II never gets past its first generation, which Optuna draws at random; "
                     + ("here its trials were identical to random search's for every seed."
                        if same else "its trials differ from random search's."))
    notes.append("gp: Optuna's GPSampler samples its first 10 trials at random (the enqueued baselines count), "
                 "then fits a Gaussian process per trial (most of the replay's compute).")
    notes.append("tpe: multivariate, grouped TPE with n_startup_trials=8 (as in search_spaces/digits.yaml).")
    if "sweep" in rep:
        runs = rep["sweep"]["runs"]
        notes.append("sweep: deterministic coordinate search around each budget's incumbent; "
                     + ("all seeds gave the same trials." if all(r == runs[0] for r in runs) else
                        "seeds differ only after it ran out of proposals."))
    return notes


# analysis (shared by A and B) ---------------------------------------------------------------------------


def median_curve(curves: list[tuple[np.ndarray, np.ndarray]], grid: np.ndarray) -> np.ndarray:
    """Median over runs of "hypervolume reached with at most t seconds of training" on ``grid``.

    A run that ended before t keeps its final value (it reached that much with no more than t).
    """
    vals = []
    for secs, hv in curves:
        idx = np.searchsorted(np.asarray(secs), grid, side="right") - 1
        vals.append(np.where(idx >= 0, np.asarray(hv)[np.clip(idx, 0, None)], 0.0))
    return np.median(np.array(vals), axis=0)


def analyse(runs_by_sampler: dict[str, list[list[dict[str, Any]]]], reference: np.ndarray,
            hv_max: float | None = None) -> dict[str, Any]:
    """Final hypervolume and the compute needed to reach random search's final hypervolume, per sampler.

    Target = median over random's seeds of its final hypervolume. Per sampler: the first compute t at which
    its median-over-seeds curve reaches the target (``compute_to_target``), its ratio to random's own, and
    per seed how many reach the target at all and when.
    """
    from bench.replay import time_to_reach
    from recipesearch.analysis import hypervolume_vs_compute

    curves: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for sampler, runs in runs_by_sampler.items():
        curves[sampler] = []
        for trials in runs:
            pts, secs = _curve_points(trials)
            c = hypervolume_vs_compute(pts, secs, list(DIRECTIONS), reference)
            hv = c.hypervolume / hv_max if hv_max else c.hypervolume
            curves[sampler].append((c.cumulative_seconds, hv))
    target = float(np.median([hv[-1] for _, hv in curves.get("random", [])])) if curves.get("random") else math.nan
    tmax = max((s[-1] for cs in curves.values() for s, _ in cs if len(s)), default=0.0)
    grid = np.linspace(0.0, tmax, 2001)

    def compute_to_target(cs: list[tuple[np.ndarray, np.ndarray]]) -> float:
        med = median_curve(cs, grid)
        hit = np.nonzero(med >= target * (1 - 1e-12))[0]
        return float(grid[hit[0]]) if len(hit) else math.inf

    random_t = compute_to_target(curves["random"]) if curves.get("random") else math.nan
    rows = {}
    for sampler, cs in curves.items():
        per_seed = [time_to_reach(c, target) for c in cs]
        finite = [x for x in per_seed if math.isfinite(x)]
        t = compute_to_target(cs)
        rows[sampler] = {
            "seeds": len(cs), "final_hv": summarize(hv[-1] for _, hv in cs),
            "total_train_seconds": summarize(s[-1] for s, _ in cs),
            "compute_to_target": t,
            "relative_to_random": t / random_t if math.isfinite(t) and random_t and math.isfinite(random_t) else math.nan,
            "reached": len(finite), "time_to_target_per_seed": summarize(finite),
        }
    return {"reference": [float(x) for x in reference], "hv_max": hv_max, "target_hv": target,
            "random_compute_to_target": random_t, "rows": rows, "_curves": curves}


def run(quick: bool = False, seeds_real: int | None = None, seeds_replay: int | None = None,
        skip_real: bool = False, rerecord: bool = False) -> dict[str, Any]:
    from recipesearch.analysis import hypervolume, reference_point

    env = environment()
    result: dict[str, Any] = {"name": NAME, "quick": quick, "environment": env}
    # B first: cheap once the table exists, and it must not wait for hours of real searches.
    use_quick, space, table, meta = load_or_record(quick, rerecord)
    n_trials = min(26, max(8, len(table) // 3))
    seeds_replay = seeds_replay or (10 if quick else 20)
    rep = run_replay(use_quick, seeds_replay, n_trials)
    ref = reference_point(table.points(), list(DIRECTIONS))
    hv_max = hypervolume(table.points(), list(DIRECTIONS), ref)
    ana = analyse({s: v["runs"] for s, v in rep.items()}, ref, hv_max)
    result["replay"] = {
        "table": meta, "table_rows": len(table), "grid": {"budgets": space.budgets, "algorithms": list(space.algorithms)},
        "n_trials": n_trials, "seeds": seeds_replay, "concurrency": space.concurrency,
        "hit_rate": {s: v["hit_rate"] for s, v in rep.items()}, "replay_seconds": {s: v["seconds"] for s, v in rep.items()},
        "sampler_notes": sampler_notes(n_trials, len(space.budgets), rep),
        "analysis": {k: v for k, v in ana.items() if k != "_curves"},
        "curves": {s: [[list(map(float, c[0])), list(map(float, c[1]))] for c in cs] for s, cs in ana["_curves"].items()},
    }
    # A) real searches (skipped: keep the previous run's, if any)
    if skip_real:
        from bench.common import load_result

        previous = load_result(NAME) or {}
        if previous.get("real"):
            result["real"] = {**previous["real"], "from_previous_run": previous.get("finished")}
    else:
        seeds = list(range(seeds_real or (1 if quick else 3)))
        runs = run_real(SAMPLERS, seeds, quick)
        ok = [r for r in runs if "trials" in r]
        allpts = np.array([[t["accuracy"], t["train_seconds"]] for r in ok for t in r["trials"]], dtype=float).reshape(-1, 2)
        ref_real = reference_point(allpts, list(DIRECTIONS))
        by = {s: [r["trials"] for r in ok if r["sampler"] == s] for s in SAMPLERS}
        ana_r = analyse({s: v for s, v in by.items() if v}, ref_real)
        result["real"] = {
            "space": str(DIGITS_SPACE.relative_to(ROOT)) + (" (quick: budgets 0.25/0.5, 10 trials)" if quick else ""),
            "seeds": len(seeds), "runs": runs, "analysis": {k: v for k, v in ana_r.items() if k != "_curves"},
            "curves": {s: [[list(map(float, c[0])), list(map(float, c[1]))] for c in cs] for s, cs in ana_r["_curves"].items()},
        }
    result["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    return result


# rendering ----------------------------------------------------------------------------------------------


def _step_median(curves: list[list[list[float]]], grid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Median and IQR over runs of step functions hv(t) sampled on ``grid``."""
    vals = []
    for secs, hv in curves:
        secs, hv = np.asarray(secs), np.asarray(hv)
        idx = np.searchsorted(secs, grid, side="right") - 1
        vals.append(np.where(idx >= 0, hv[np.clip(idx, 0, None)], 0.0))  # a finished run holds its final value
    a = np.array(vals)
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.nanmedian(a, 0), np.nanpercentile(a, 25, 0), np.nanpercentile(a, 75, 0)


def plot(part: dict[str, Any], name: str, title: str, normalised: bool) -> str | None:
    """Median (IQR band) over seeds of hypervolume reached within t seconds of training, per sampler.

    Normalised (replay): plots the gap to the table's best front, 1 - HV/HV_max, on a log axis, where the
    samplers differ; raw (real runs): plots the hypervolume itself.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = part.get("curves") or {}
    if not curves:
        return None
    tmax = max(c[0][-1] for cs in curves.values() for c in cs if c[0])
    grid = np.linspace(0, tmax, 400)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    tf = (lambda v: np.maximum(1.0 - v, 1e-4)) if normalised else (lambda v: v)
    for sampler, cs in curves.items():
        cs = [c for c in cs if c[0]]
        if not cs:
            continue
        med, lo, hi = _step_median(cs, grid)
        (line,) = ax.plot(grid, tf(med), label=f"{sampler} ({len(cs)} run{'s' if len(cs) > 1 else ''})",
                          ls="--" if sampler == "random" else "-")
        if len(cs) > 2:
            ax.fill_between(grid, tf(lo), tf(hi), color=line.get_color(), alpha=0.12)
    target = part["analysis"].get("target_hv")
    if target and math.isfinite(target):
        ax.axhline(tf(target), color="k", ls=":", lw=0.8, label="random's final HV (median)")
    if normalised:
        ax.set_yscale("log")
        ax.set_ylim(top=1.05)
    ax.set_xlabel("cumulative training time of the search's trials (s)")
    ax.set_ylabel("1 - hypervolume / table's best (log)" if normalised else "hypervolume")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, name)


def _table(analysis: dict[str, Any], norm: bool) -> str:
    rows = []
    for s, r in analysis["rows"].items():
        t = r["compute_to_target"]
        rows.append([s, r["seeds"], fmt_summary(r["final_hv"], ".3f" if norm else ".4g", "iqr"),
                     fmt_summary(r["total_train_seconds"], ".0f", "iqr"),
                     fmt(t, ".0f") if math.isfinite(t) else "not reached",
                     fmt(r["relative_to_random"], ".2f"),
                     f"{r['reached']}/{r['seeds']}", fmt_summary(r["time_to_target_per_seed"], ".0f", "iqr")])
    return md_table(["sampler", "seeds", "final hypervolume" + (" (/ table's)" if norm else "") + " [IQR]",
                     "compute spent (train s) [IQR]", "train s to reach random's final HV (median curve)",
                     "relative to random", "seeds reaching it", "train s to reach it, those seeds [IQR]"], rows)


def render(result: dict[str, Any]) -> str:
    parts = [
        "**What**: hypervolume of the (accuracy ↑, train_seconds ↓) front against the cumulative training "
        "time the search has spent, for the samplers `tpe` (multivariate TPE), `nsga2`, `gp`, `random` and "
        "the hand `sweep` strategy; headline: the training time each needs to reach the final hypervolume of "
        "random search (median over random's seeds of the final hypervolume), read off each sampler's median "
        "curve over seeds (hypervolume reached within t seconds of training); 'relative to random' < 1 means "
        "it gets there with less compute. Per-seed counts show how many seeds of each sampler get there at all.",
    ]
    rep = result.get("replay")
    if rep:
        t = rep["table"]
        parts += [
            "",
            "### Replay (many seeds, seconds each)",
            f"**How**: the discrete digits space budgets {rep['grid']['budgets']} × switches of "
            f"{', '.join(rep['grid']['algorithms'])} (defaults) over `recipes/digits_baseline.yaml` has "
            f"{rep['table_rows']} recipes; each was trained once (2 processes × 1 thread, like a search at "
            f"concurrency 2; {t.get('train_seconds_total', math.nan):.0f} s of training, recorded "
            f"{t.get('recorded', '?')}) into `{t.get('path')}`. Every sampler then searched that table "
            f"(`bench/replay.py`: the runner's ask/tell loop without Ray, baselines first, "
            f"{rep['concurrency']} trials asked per round, lookups by the canonical params key) with "
            f"{rep['seeds']} seeds × {rep['n_trials']} trials. Exact-hit rate: "
            f"{', '.join(f'{s} {v:.0%}' for s, v in rep['hit_rate'].items())}. Hypervolume is divided by "
            f"the whole table's (1.0 = the best front of this space); reference point "
            f"(accuracy, seconds) = ({rep['analysis']['reference'][0]:.3f}, {rep['analysis']['reference'][1]:.1f}). "
            f"Sampler compute for all {rep['seeds']} seeds: "
            f"{', '.join(f'{s} {v:.1f} s' for s, v in rep['replay_seconds'].items())}.",
            "",
            _table(rep["analysis"], True),
            "",
            *[f"- {n}" for n in rep.get("sampler_notes", [])],
        ]
        img = plot(rep, f"{NAME}_replay", f"replay: {rep['seeds']} seeds x {rep['n_trials']} trials per sampler "
                                              "(median, IQR band)", True)
        if img:
            parts += ["", f"![hypervolume vs compute, replay]({img})"]
    real = result.get("real")
    if real:
        errors = [f"{r['sampler']} seed {r['seed']}: {r['error']}" for r in real["runs"] if "error" in r]
        walls = summarize(r["wall_seconds"] for r in real["runs"] if "wall_seconds" in r)
        parts += [
            "",
            "### Real searches (trials really train)",
            f"**How**: `recipesearch.engine.api.search` on `{real['space']}` with only the sampler swapped, "
            f"{real['seeds']} seed(s) per sampler, samplers interleaved within a seed; trials in completion "
            f"order; reference point = that of all real trials together "
            f"({real['analysis']['reference'][0]:.3f}, {real['analysis']['reference'][1]:.1f}). Wall time per "
            f"search {fmt_summary(walls, '.0f', 'range')} s. Run dirs (trials.csv, report) under `runs/bench-search/`."
            + (f" Errors: {'; '.join(errors)}." if errors else "")
            + (" With one seed and a few trials per sampler these rows are anecdotes (trial order under Ray and "
               "noisy train_seconds also differ run to run); the replay above is the sampler comparison."
               if real["seeds"] < 3 else ""),
            "",
            _table(real["analysis"], False),
        ]
        img = plot(real, f"{NAME}_real", "real searches on the digits space (median over seeds)", False)
        if img:
            parts += ["", f"![hypervolume vs compute, real runs]({img})"]
    else:
        parts += ["", "_Real searches were not run in this invocation._"]
    parts += ["", "**Goal**: none set; this compares samplers (the issue asks for the headline number)."]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seeds-real", type=int)
    p.add_argument("--seeds-replay", type=int)
    p.add_argument("--skip-real", action="store_true", help="replay only")
    p.add_argument("--rerecord", action="store_true", help="train the replay table again")
    a = p.parse_args(argv)
    from bench.common import save_result

    res = run(a.quick, a.seeds_real, a.seeds_replay, a.skip_real, a.rerecord)
    save_result(NAME, res)
    print(render(res))


if __name__ == "__main__":
    main()
