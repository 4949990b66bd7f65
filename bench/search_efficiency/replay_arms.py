"""Part B of search_efficiency: the recorded table (every recipe of a discrete digits space trained once,
with its rung values) and the replay of every sampler and scheduler arm over it (``bench/replay.py``).
"""
from __future__ import annotations

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
)
from bench.search_efficiency.config import (
    ARMS,
    BASE_RECIPE,
    GRID,
    GRID_QUICK,
    LONG_ARMS,
    LONG_FACTOR,
    long_label,
)


def grid_space(quick: bool) -> Any:
    from bench.replay import grid_space as make

    g = GRID_QUICK if quick else GRID
    return make(BASE_RECIPE, g["budgets"], g["algorithms"], name="digits-replay-grid" + ("-quick" if quick else ""),
                trials=26, concurrency=2, threads=1, sampler={"name": "tpe", "seed": 0, "n_startup_trials": 8})


def table_path(quick: bool) -> Path:
    return BENCH_DIR / f"replay_table_digits{'_quick' if quick else ''}.csv"


def rung_fractions(space: Any) -> list[float]:
    """The rungs MO-ASHA uses on this space (its scheduler's eta and min_fraction): what the table records."""
    from bench.replay import with_scheduler

    return list(with_scheduler(space, "moasha").scheduler.rungs())


def _train_one(job: tuple[dict[str, Any], list[float]]) -> dict[str, Any]:
    """Worker: train one recipe with one thread (like a search trial at concurrency 2), keeping its curve."""
    import torch

    from recipesearch.recipe import recipe_from_dict
    from recipesearch.train.loop import Trainer

    recipe, fractions = job
    torch.set_num_threads(1)
    rungs: list[list[float]] = []

    def collect(report: dict[str, Any]) -> bool:
        rungs.append([float(report["rung"]), float(report["accuracy"]), float(report["train_seconds"])])
        return True  # recording: every run goes to its end

    try:
        # Rungs on test: the split of the table's accuracy (the grid's metric_split; digits has no val split).
        # The trainer pauses its clock for them, so the final train_seconds is the same as without rungs.
        r = Trainer(recipe_from_dict(recipe), rungs=fractions, on_rung=collect, rung_split="test").fit()
    except Exception as exc:  # noqa: BLE001
        return {"accuracy": math.nan, "train_seconds": math.nan, "rungs": [], "error": f"{type(exc).__name__}: {exc}"[:200]}
    return {"accuracy": r.accuracy, "train_seconds": r.train_seconds, "throughput": r.throughput,
            "recipe_id": r.recipe_id, "rungs": rungs, "rung_seconds": r.rung_seconds, "error": ""}


def record_table(space: Any, path: Path) -> dict[str, Any]:
    """Train every recipe of the discrete ``space`` (2 processes, 1 thread each) and write the table CSV."""
    import multiprocessing as mp

    from bench.replay import TrialRecord, enumerate_space, write_table

    grid = enumerate_space(space)
    recipes = [space.recipe_for(p).to_dict() for p in grid]
    fractions = rung_fractions(space)
    print(f"  recording the replay table: {len(grid)} recipes, rungs at {[round(f, 4) for f in fractions]}, "
          f"2 processes x 1 thread -> {path}", flush=True)
    env = environment()  # before training: its load average is the machine's as the recording started
    t0 = time.time()
    with ProcessPoolExecutor(max_workers=2, mp_context=mp.get_context("spawn")) as pool:
        results = list(pool.map(_train_one, [(rec, fractions) for rec in recipes]))
    records = [TrialRecord(i, p, r["accuracy"], r["train_seconds"], "COMPLETE" if not r["error"] else "FAIL")
               for i, (p, r) in enumerate(zip(grid, results))]
    extra = {i: {"recipe_id": r.get("recipe_id", ""), "throughput": r.get("throughput", math.nan),
                 "error": r["error"], "recipe_json": json.dumps(rec), "rungs": json.dumps(r["rungs"]),
                 "rung_seconds": r.get("rung_seconds", math.nan)}
             for i, (r, rec) in enumerate(zip(results, recipes))}
    write_table(records, path, extra)
    meta = {"space_hash": space.hash, "recipes": len(grid), "wall_seconds": time.time() - t0,
            "train_seconds_total": float(np.nansum([r["train_seconds"] for r in results])),
            "rung_fractions": fractions, "reduction_factor": space.scheduler.reduction_factor, "rung_split": "test",
            "failed": int(sum(bool(r["error"]) for r in results)), "environment": env,
            "recorded": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    path.with_suffix(".json").write_text(json.dumps(meta, indent=1))
    return meta


def _table_is_current(meta: dict[str, Any] | None, space: Any, path: Path) -> bool:
    """Recorded for this space, with the learning curves at this space's rungs."""
    if meta is None or meta.get("space_hash") != space.hash or not path.exists():
        return False
    recorded = meta.get("rung_fractions") or []
    wanted = rung_fractions(space)
    return len(recorded) == len(wanted) and all(math.isclose(a, b) for a, b in zip(recorded, wanted))


def load_or_record(quick: bool, rerecord: bool = False) -> tuple[bool, Any, Any, dict[str, Any]]:
    """(quick table?, space, table, meta): the full table when it exists (quick mode too), else record."""
    from bench.replay_table import Table

    use_quick = quick and not (table_path(False).exists() and not rerecord)
    space, path = grid_space(use_quick), table_path(use_quick)
    meta_path = path.with_suffix(".json")
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else None
    if rerecord or not _table_is_current(meta, space, path):
        meta = record_table(space, path)
    return use_quick, space, Table.read_csv(path, space), {**meta, "path": str(path.relative_to(ROOT))}


def rung_informativeness(table: Any) -> list[dict[str, Any]]:
    """Per budget and rung: the median accuracy there and at the end, and Spearman's rank correlation of
    the two over the budget's recipes. A rung decision is only as good as this ranking (and a rung whose
    accuracies are all at chance ranks on train_seconds alone)."""
    from scipy.stats import spearmanr

    out = []
    for budget in sorted({float(p["budget"]) for p in table.params}):
        rows = [i for i, p in enumerate(table.params) if float(p["budget"]) == budget and table.curves[i]]
        final = [table.outcomes[i][0] for i in rows]
        for k, (fraction, _, _) in enumerate(table.curves[rows[0]] if rows else ()):
            at = [table.curves[i][k][1] for i in rows]
            rho = spearmanr(at, final)[0] if len(set(at)) > 1 and len(set(final)) > 1 else math.nan
            out.append({"budget": budget, "fraction": fraction, "recipes": len(rows),
                        "median_accuracy": float(np.median(at)), "median_final_accuracy": float(np.median(final)),
                        "spearman_with_final": float(rho)})
    return out


_TABLES: dict[bool, tuple[Any, Any]] = {}


def _table(quick_table: bool) -> tuple[Any, Any]:
    """(space, table), read once per process."""
    from bench.replay_table import Table

    if quick_table not in _TABLES:
        space = grid_space(quick_table)
        _TABLES[quick_table] = (space, Table.read_csv(table_path(quick_table), space))
    return _TABLES[quick_table]


def _trial_rows(records: list[Any]) -> list[dict[str, Any]]:
    return [{"number": r.number, "accuracy": r.accuracy, "train_seconds": r.train_seconds, "state": r.state,
             "params": r.params, "pruned_at": r.pruned_at, "promoted_from": r.promoted_from,
             "duplicate_of": r.duplicate_of} for r in records]


def _replay_job(job: tuple[bool, str, int, int]) -> tuple[list[dict[str, Any]], float, float]:
    """Worker: one arm (sampler + scheduler), one seed, against the table."""
    import torch

    from bench.replay import replay

    quick_table, arm, seed, n_trials = job
    torch.set_num_threads(1)
    space, table = _table(quick_table)
    sampler, scheduler = ARMS[arm]
    options = {"n_startup_trials": 8} if sampler == "tpe" else None
    t0 = time.perf_counter()
    recs, hit = replay(space, table, sampler, seed, n_trials, concurrency=space.concurrency, options=options,
                       scheduler=scheduler)
    return _trial_rows(recs), hit, time.perf_counter() - t0


def replay_plan(n_trials: int) -> dict[str, tuple[str, int]]:
    """label -> (arm, trials): every arm at ``n_trials``, the schedulers also at ``LONG_FACTOR`` x that."""
    plan = {arm: (arm, n_trials) for arm in ARMS}
    plan.update({long_label(arm): (arm, LONG_FACTOR * n_trials) for arm in LONG_ARMS if arm in ARMS})
    return plan


def run_replay(quick_table: bool, seeds: int, plan: dict[str, tuple[str, int]]) -> dict[str, Any]:
    """Every planned arm x seed against the table, in 2 processes (GP's model fits dominate the cost)."""
    import multiprocessing as mp

    jobs = [(label, (quick_table, arm, seed, n)) for label, (arm, n) in plan.items() for seed in range(seeds)]
    with ProcessPoolExecutor(max_workers=2, mp_context=mp.get_context("spawn")) as pool:
        results = list(pool.map(_replay_job, [job for _, job in jobs]))
    out: dict[str, Any] = {}
    for (label, _), (runs, hit, secs) in zip(jobs, results):
        o = out.setdefault(label, {"runs": [], "hits": [], "seconds": 0.0, "trials": plan[label][1]})
        o["runs"].append(runs)
        o["hits"].append(hit)
        o["seconds"] += secs
    for label, o in out.items():
        o["hit_rate"] = float(np.mean(o.pop("hits")))
        print(f"  replay {label}: {seeds} seeds x {o['trials']} trials, {o['seconds']:.1f} s of sampler compute",
              flush=True)
    return out


def sampler_notes(n_trials: int, n_baselines: int, rep: dict[str, Any]) -> list[str]:
    """Facts about the samplers' and schedulers' settings (and what the replay showed) that explain a result."""
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
    notes.append("moasha: a search trial reports at 1/9 and 1/3 of its steps and goes on only if it ranks in the "
                 "best n // 3 of the n trials of its budget at that rung so far (all go on while n < 3); the "
                 "baseline runs never stop. The trial budget counts stopped trials, so a pruning arm runs the "
                 "same number of trials with less compute.")
    notes.append("repeats: a proposal of a recipe the search has already trained or is training (the same "
                 "parameters, budget and seed) is answered without training (0 s, counted as a trial, PRUNED with "
                 "duplicate_of), in every arm alike, random's too; the ratios to random's compute compare arms that "
                 "all skip their repeats.")
    notes.append("promote: every new proposal starts at the cheapest budget (0.25); after each finished trial, the "
                 "best third of the recipes finished at a budget are queued again at the next budget. With "
                 "`tpe+promote` and `gp+promote` the model-based sampler chooses each new recipe (its budget fixed "
                 "at the cheapest) from every trial so far, the promoted ones at higher budgets included.")
    return notes
