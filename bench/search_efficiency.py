"""Search efficiency: hypervolume against cumulative training time per sampler and scheduler.

Three parts, all reported:
A) Real searches: ``recipesearch.engine.api.search`` on ``search_spaces/digits.yaml`` with the sampler
   swapped, ``SEEDS_REAL`` seeds each (trials really train, through Ray). Trials are taken in completion
   order; cumulative training time = running sum of their train_seconds (compute, not wall time:
   concurrency does not flatter a sampler). One reference point for every run: ``reference_point`` of
   the union of all completed trials.
B) Replay (``bench/replay.py``): a discrete digits space (budgets x algorithm switches at their defaults)
   whose every recipe was trained once and recorded in ``reports/bench/replay_table_digits*.csv``, with
   its learning curve (accuracy and train_seconds so far after 1/9 and 1/3 of its steps, the rungs of
   ``scheduler: moasha`` at eta 3). Each arm (a sampler, with or without a scheduler: MO-ASHA stopping,
   promotion across budgets) searches that table with >= 20 seeds, the same trial count and concurrency
   as a real search; the scheduler is the search loop's own code, fed the recorded rung values. Exact
   lookups (every proposal is in the table). Hypervolume is normalised by the table's own (the best any
   search of that space can reach). A stopped trial costs its last rung's train_seconds.
C) Peer: Syne Tune's own ``MOASHA`` scheduler on the same table, driven through its scheduler API
   (``suggest`` / ``on_trial_add`` / ``on_trial_result`` / ``on_trial_remove``, exactly the calls Syne Tune's
   ``Tuner`` makes) by an explicit event clock with 2 workers, next to our MO-ASHA rule in the same
   driver (a control that separates the two rules from the two drivers).
Headline: the cumulative training time each arm needs to reach the final hypervolume of random search
(median over random's seeds), read off its median-over-seeds curve, as a ratio to random's own, with a
bootstrap interval over seeds. For the schedulers, the share of the full-budget frontier lost to trials
they stopped (replay knows every stopped trial's full-budget outcome).
"""
from __future__ import annotations

import argparse
import json
import math
import os
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
TITLE = "Search efficiency: hypervolume vs cumulative training time per sampler and scheduler (replay + real runs)"
# The real searches' arms: label -> (sampler, scheduler); issue 14's seven, then promotion with the
# model-based samplers (the best replay arms), interleaved within a seed.
REAL_ARMS = {"random": ("random", "fifo"), "tpe": ("tpe", "fifo"), "gp": ("gp", "fifo"), "nsga2": ("nsga2", "fifo"),
             "tpe+moasha": ("tpe", "moasha"), "random+moasha": ("random", "moasha"), "promote": ("random", "promote"),
             "tpe+promote": ("tpe", "promote"), "gp+promote": ("gp", "promote")}
SAMPLERS = tuple(REAL_ARMS)
# Replay arms: name -> (sampler, scheduler). The schedulers keep the space's eta 3 and rungs 1/9, 1/3, but
# one: its first rung at 1/3 (the table holds both rungs), because 1/9 of a digits run is 4 to 17 steps.
LATE_RUNG = {"name": "moasha", "min_fraction": 1 / 3}
ARMS: dict[str, tuple[str, str | dict[str, Any]]] = {
    "random": ("random", "fifo"), "tpe": ("tpe", "fifo"), "gp": ("gp", "fifo"), "nsga2": ("nsga2", "fifo"),
    "sweep": ("sweep", "fifo"), "tpe+moasha": ("tpe", "moasha"), "random+moasha": ("random", "moasha"),
    "random+moasha, rung 1/3 only": ("random", LATE_RUNG),
    "promote": ("random", "promote"), "tpe+promote": ("tpe", "promote"), "gp+promote": ("gp", "promote"),
    "random+moasha+promote": ("random", "moasha+promote"),
}
SYNETUNE, CONTROL = "syne-tune MOASHA", "our MO-ASHA rule, same driver"
# A trial stopped at a rung costs a fraction of one run to its end, yet counts as a whole trial: at the same
# trial count a scheduler spends much less compute than FIFO and may end before random's final hypervolume.
# The goal is about compute, so the scheduler arms also run at random's compute: up to LONG_FACTOR x the
# trials, each search cut where its compute first reaches random's median compute per search.
LONG_FACTOR = 10
LONG_SUFFIX = " (random's compute)"
# (not gp+promote: a Gaussian-process fit per trial over up to 10x the trials would take the replay hours)
LONG_ARMS = ("tpe+moasha", "random+moasha", "random+moasha, rung 1/3 only", "promote", "tpe+promote",
             "random+moasha+promote", SYNETUNE, CONTROL)
GOAL_RATIO = 0.30  # issue 14: a scheduler reaches random's final hypervolume with <= 0.30x its compute
BOOTSTRAP = 1000
DIGITS_SPACE = ROOT / "search_spaces" / "digits.yaml"
BASE_RECIPE = ROOT / "recipes" / "digits_baseline.yaml"
RUNS_DIR = ROOT / "runs" / "bench-search"

# The replay grid: every recipe of this discrete space is trained once and recorded.
GRID = {"budgets": [0.25, 0.5, 1.0], "algorithms": ["channels_last", "progressive_resizing", "blurpool", "mixup", "ema",
                                                    "label_smoothing", "sam", "patch_whitening"]}
GRID_QUICK = {"budgets": [0.25, 0.5, 1.0], "algorithms": ["channels_last", "progressive_resizing", "mixup"]}
DIRECTIONS = ("maximize", "minimize")


# A) real searches ---------------------------------------------------------------------------------------


def real_space(arm: str, seed: int, quick: bool) -> Any:
    """digits.yaml with the arm's sampler and scheduler (quick: budgets 0.25 and 0.5 only, 10 trials)."""
    import yaml

    from recipesearch.space import space_from_dict

    sampler, scheduler = REAL_ARMS.get(arm, (arm, "fifo"))
    data = yaml.safe_load(DIGITS_SPACE.read_text())
    data["scheduler"] = {"name": scheduler}
    options = {k: v for k, v in (data.get("sampler") or {}).items() if k not in ("name", "seed")}
    data["sampler"] = {"name": sampler, "seed": seed, **(options if sampler == data["sampler"]["name"] else {})}
    data["name"] = f"bench-{arm.replace('+', '-')}-{seed}"
    if quick:
        data["budgets"], data["trials"] = [0.25, 0.5], 10
    # Search efficiency compares the proposal stage: one baseline run per budget, no confirmation.
    data["baseline"], data["confirm"] = {"seeds": 1}, False
    return space_from_dict(data, source=str(DIGITS_SPACE), base_dir=DIGITS_SPACE.parent)


def _real_goal_text(analysis: dict[str, Any]) -> str:
    """The goal read on the real searches: the arm with the least compute to random's final hypervolume."""
    rows = {a: r for a, r in analysis.get("rows", {}).items() if a != "random"}
    finite = [(r["relative_to_random"], a) for a, r in rows.items() if math.isfinite(r.get("relative_to_random", math.inf))]
    if not finite:
        return "**Goal** (real searches): no arm reached random's final hypervolume on its median curve: **not met**."
    ratio, arm = min(finite)
    ci = rows[arm].get("relative_interval_95") or [math.nan, math.nan]
    stopped = {a: r["stopped_per_run"]["median"] for a, r in rows.items() if r.get("stopped_per_run", {}).get("median")}
    random_spent = analysis.get("rows", {}).get("random", {}).get("total_train_seconds", {}).get("median", math.nan)
    spent = {a: r["total_train_seconds"]["median"] / random_spent for a, r in rows.items()
             if r.get("total_train_seconds") and math.isfinite(random_spent) and random_spent > 0}
    return (f"**Goal** (real searches, ≤ {analysis.get('goal_ratio', 0.3):g}× random's compute): "
            f"{'**met**' if ratio <= analysis.get('goal_ratio', 0.3) else '**not met**'}; the best arm is `{arm}` at "
            f"{ratio:.2f}x [95% bootstrap over seeds {fmt(ci[0], '.2f')}–"
            f"{fmt(ci[1], '.2f') if math.isfinite(ci[1]) else 'never'}]"
            + (f"; MO-ASHA arms stopped {', '.join(f'{a} {n:g}' for a, n in stopped.items())} trials per search "
               f"(median) and spent {', '.join(f'{spent[a]:.2f}x' for a in stopped if a in spent)} of random's compute"
               + ("" if any(math.isfinite(rows[a].get("relative_to_random", math.inf)) for a in stopped)
                  else ", without reaching random's final hypervolume")
               if stopped else "") + ".")


def _replay_goal_text(rows: dict[str, Any], best: tuple[str, float] | None) -> str:
    """Met or not by the median curve (the rule), with each meeting arm's bootstrap interval and how many seeds
    reach the target, so a point estimate whose interval reaches above the goal reads as such."""
    head = f"**Goal** (issue 14): an arm reaches random's final hypervolume with ≤ {GOAL_RATIO:.2f}× random's compute: "
    met = {a: r for a, r in rows.items() if r.get("goal_met")}
    if not met:
        return head + "**not met**" + (f"; the best arm is `{best[0]}` at {best[1]:.2f}x" if best else "") + "."

    def cell(arm: str, r: dict[str, Any]) -> str:
        above = "" if _interval_meets_goal(r) else " (the interval reaches above the goal)"
        return f"`{arm}` ({_ratio_cell(r)}{above}, {r['reached']}/{r['seeds']} seeds reach the target)"

    return head + "**met** by " + ", ".join(cell(a, r) for a, r in met.items()) + "."


def _table_choice_text(rep: dict[str, Any]) -> list[str]:
    """Why the full table switches the methods it does (the quick table is only a smoke test: nothing)."""
    if list(rep["grid"]["algorithms"]) != GRID["algorithms"]:
        return []
    return ["", f"**Why this table.** A search of {rep['n_trials']} trials sees at most "
            f"{rep['n_trials'] / max(rep['table_rows'], 1):.0%} of its recipes. Until 2026-11-26 the table had 5 "
            "switches (channels_last, progressive_resizing, blurpool, mixup, ema: 96 recipes, 48 distinct "
            "outcomes as ema changed nothing at these lengths), where random search's 26 trials covered about half "
            "of what could be found: there the best arm (`tpe+promote`) needed 0.50x of random's compute and even "
            "a searcher that knew every outcome 0.22x (this section's previous runs, in git). The real spaces "
            "this tool searches (`search_spaces/digits.yaml`: 12 methods with continuous settings, learning rate, "
            "weight decay, optimizer) are far larger than any trial budget, so the table now switches 8 of the "
            "digits space's methods (label_smoothing, sam, patch_whitening added): 768 recipes."]


def _arms_text(arms: set[str]) -> str:
    return ", ".join(f"{a}: sampler {s}, scheduler {sc}" for a, (s, sc) in REAL_ARMS.items() if a in arms)


def run_real(samplers: tuple[str, ...], seeds: list[int], quick: bool) -> list[dict[str, Any]]:
    import pandas as pd

    from recipesearch.engine.api import search

    runs = []
    for seed in seeds:
        for sampler in samplers:  # samplers interleaved within a seed: load drifts hit all alike
            space = real_space(sampler, seed, quick)
            out = RUNS_DIR / f"{'quick-' if quick else ''}{sampler.replace('+', '-')}-{seed}"
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
                       "budget": float(r.budget) if pd.notna(r.budget) else math.nan,
                       "duplicate_of": int(r.duplicate_of) if pd.notna(getattr(r, "duplicate_of", None)) else None}
                      for r in df.itertuples()]
            runs.append({"sampler": sampler, "seed": seed, "wall_seconds": wall, "trials": trials,
                         "run_dir": str(out.relative_to(ROOT)), "load": load_now()})
    return runs


# B) the recorded table ----------------------------------------------------------------------------------


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
    from bench.replay import Table

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
    from bench.replay import Table

    if quick_table not in _TABLES:
        space = grid_space(quick_table)
        _TABLES[quick_table] = (space, Table.read_csv(table_path(quick_table), space))
    return _TABLES[quick_table]


def _trial_rows(records: list[Any]) -> list[dict[str, Any]]:
    return [{"number": r.number, "accuracy": r.accuracy, "train_seconds": r.train_seconds, "state": r.state,
             "params": r.params, "pruned_at": r.pruned_at, "promoted_from": r.promoted_from,
             "duplicate_of": r.duplicate_of} for r in records]


def stopped(t: dict[str, Any]) -> bool:
    """Stopped at a rung by a scheduler (not a repeated proposal, which is PRUNED without training)."""
    return t["state"] == "PRUNED" and t.get("duplicate_of") is None


def repeated(t: dict[str, Any]) -> bool:
    return t.get("duplicate_of") is not None


def scheduler_label(scheduler: str | dict[str, Any]) -> str:
    if isinstance(scheduler, str):
        return scheduler
    rest = ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in scheduler.items() if k != "name")
    return f"{scheduler['name']} ({rest})"


def long_label(arm: str) -> str:
    return arm + LONG_SUFFIX


def arm_of(label: str) -> str:
    return label.removesuffix(LONG_SUFFIX)


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


# C) the peer: Syne Tune's MOASHA on the same table ----------------------------------------------------


def synetune_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("syne-tune")
    except Exception:  # noqa: BLE001 - not installed: the peer rows are left out
        return None


class _OurRule:
    """Our MO-ASHA rule (``analysis.rungs.decide``: per budget, baseline runs never stopped, as in
    ``SearchLoop.report_rung``) behind the interface the event clock uses: the control arm."""

    def __init__(self, space: Any):
        self.eta = space.scheduler.reduction_factor
        self.records: list[Any] = []

    def go_on(self, trial_id: int, params: dict[str, Any], fraction: float, acc: float, secs: float,
              baseline: bool) -> bool:
        from recipesearch.analysis.rungs import RungRecord, decide

        if baseline:
            return True
        me = RungRecord(trial_id, float(params["budget"]), fraction, acc, secs)
        decision = decide(me, self.records, self.eta)
        self.records.append(me)
        return decision.go_on


def peer_run(space: Any, table: Any, seed: int, n_trials: int, rule: str, workers: int = 2) -> list[dict[str, Any]]:
    """One search of ``table`` under Syne Tune's MOASHA (``rule`` "synetune") or our rule ("ours"), with an
    explicit event clock: ``workers`` trials run at once; each runs its recorded curve (results at levels 1, 3
    and 9 of 9, i.e. after 1/9, 1/3 and all of its steps, at start time + that level's train_seconds); the
    earliest pending result goes to the scheduler; STOP frees the worker at once (the trial cost its
    train_seconds so far) and the next trial starts there. Trials are returned in the order they ended.

    Syne Tune's side is its own code: ``MOASHA(config_space, metrics=["error", "train_seconds"],
    time_attr="rung_level", max_t=9, grace_period=1, reduction_factor=3)``, configurations from its
    ``suggest`` (uniform over the grid's values; numpy's global generator, seeded with ``seed``), the
    first ``len(space.baselines())`` replaced by the baseline recipes as in our loop; every result goes
    to ``on_trial_result`` and a STOP (or the last level) to ``on_trial_remove``, as its ``Tuner`` does.
    Both rules see the same configurations for the same seed (the control still draws them from MOASHA)."""
    import heapq
    from datetime import datetime

    from syne_tune.backend.trial_status import Trial
    from syne_tune.config_space import choice
    from syne_tune.optimizer.scheduler import SchedulerDecision
    from syne_tune.optimizer.schedulers.multiobjective.moasha import MOASHA

    from bench.replay import param_value

    names = space.param_names()
    values = {n: sorted({p[n] for p in table.params if n in p}) for n in names}
    levels = [round(f * 9) for f in rung_fractions(space)] + [9]
    np.random.seed(seed)  # MOASHA samples configurations (and brackets) from numpy's global generator
    moasha = MOASHA({n: choice(v) for n, v in values.items()}, metrics=["error", "train_seconds"], do_minimize=True,
                    time_attr="rung_level", max_t=9, grace_period=1, reduction_factor=3, random_seed=seed)
    ours = _OurRule(space) if rule == "ours" else None
    baselines = list(space.baselines())
    running: dict[int, dict[str, Any]] = {}
    heap: list[tuple[float, int]] = []  # (time of the trial's next result, trial id)
    out: list[dict[str, Any]] = []

    def start(now: float) -> None:
        tid = len(running) + len(out)
        suggestion = moasha.suggest()  # drawn for the baselines too: both rules see the same sequence
        params = baselines.pop(0) if baselines else {n: param_value(v) for n, v in suggestion.config.items()}
        trial = Trial(trial_id=tid, config=params, creation_time=datetime.now())
        moasha.on_trial_add(trial)
        i = table.index(params)
        if i is None:
            raise ValueError(f"configuration not in the table: {params}")
        curve = [(lv, a, s) for lv, (_, a, s) in zip(levels, table.curves[i])] + [(9, *table.outcomes[i])]
        # a baseline run: queued first, or the base recipe sampled (our loop never stops either)
        baseline = tid < len(space.baselines()) or space.is_baseline(params)
        running[tid] = {"trial": trial, "params": params, "curve": curve, "k": 0, "start": now, "baseline": baseline}
        heapq.heappush(heap, (now + curve[0][2], tid))

    def finish(tid: int, state: str, acc: float, secs: float, level: int) -> None:
        r = running.pop(tid)
        out.append({"number": tid, "accuracy": acc if state == "COMPLETE" else math.nan, "train_seconds": secs,
                    "state": state, "params": r["params"], "pruned_at": level / 9 if state == "PRUNED" else None,
                    "promoted_from": None})

    while len(running) < workers and len(out) + len(running) < n_trials:
        start(0.0)
    while heap:
        now, tid = heapq.heappop(heap)
        r = running[tid]
        level, acc, secs = r["curve"][r["k"]]
        if ours is not None:
            go_on = level == 9 or ours.go_on(tid, r["params"], level / 9, acc, secs, r["baseline"])
        else:
            decision = moasha.on_trial_result(r["trial"], {"rung_level": level, "error": 1.0 - acc, "train_seconds": secs})
            go_on = decision != SchedulerDecision.STOP
            if not go_on:  # the Tuner's handling of a STOP (the last level always answers STOP)
                moasha.on_trial_remove(r["trial"])
        if level == 9:
            finish(tid, "COMPLETE", acc, secs, level)
        elif not go_on:
            finish(tid, "PRUNED", math.nan, secs, level)
        else:
            r["k"] += 1
            heapq.heappush(heap, (r["start"] + r["curve"][r["k"]][2], tid))
            continue
        if len(out) + len(running) < n_trials:
            start(now)
    return out


def run_peers(space: Any, table: Any, seeds: int, n_trials: int) -> dict[str, Any]:
    """Syne Tune's MOASHA and the control, ``seeds`` seeds each (in this process: a second per seed)."""
    version = synetune_version()
    if version is None:
        print("  syne-tune is not installed (pip install -e '.[bench]'): no peer rows", flush=True)
        return {}
    out: dict[str, Any] = {}
    for arm, rule in ((SYNETUNE, "synetune"), (CONTROL, "ours")):
        for label, n in ((arm, n_trials), (long_label(arm), LONG_FACTOR * n_trials)):
            t0 = time.perf_counter()
            runs = [peer_run(space, table, seed, n, rule) for seed in range(seeds)]
            out[label] = {"runs": runs, "hit_rate": 1.0, "seconds": time.perf_counter() - t0, "version": version,
                          "trials": n}
            print(f"  peer {label}: {seeds} seeds x {n} trials, {out[label]['seconds']:.1f} s", flush=True)
    return out


# analysis (shared by A, B and C) -------------------------------------------------------------------------


def _curve_points(trials: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """(points, compute) in trial order: a trial with no full-budget result (failed, stopped) adds its
    compute (its train_seconds so far, 0 when unknown) and no point."""
    pts = np.array([[t["accuracy"], t["train_seconds"]] for t in trials], dtype=float).reshape(-1, 2)
    secs = np.nan_to_num(pts[:, 1], nan=0.0)
    pts[np.isnan(pts[:, 0])] = np.nan
    return pts, secs


def median_curve(curves: list[tuple[np.ndarray, np.ndarray]], grid: np.ndarray) -> np.ndarray:
    """Median over runs of "hypervolume reached with at most t seconds of training" on ``grid``."""
    from recipesearch.analysis.hypervolume_reach import on_grid

    return np.median(on_grid(curves, grid), axis=0)


def analyse(runs_by_arm: dict[str, list[list[dict[str, Any]]]], reference: np.ndarray,
            hv_max: float | None = None, bootstrap: int = BOOTSTRAP) -> dict[str, Any]:
    """Final hypervolume and the compute needed to reach random search's final hypervolume, per arm.

    Target = median over random's seeds of its final hypervolume. Per arm: the first compute t at which its
    median-over-seeds curve reaches the target (``compute_to_target``), its ratio to random's own with a
    bootstrap interval over seeds, whether that ratio meets the goal, and per seed how many reach the
    target at all and when.
    """
    from recipesearch.analysis import hypervolume_vs_compute
    from recipesearch.analysis.hypervolume_reach import bootstrap_compute_ratio, first_reach, on_grid

    curves: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for arm, runs in runs_by_arm.items():
        curves[arm] = []
        for trials in runs:
            pts, secs = _curve_points(trials)
            c = hypervolume_vs_compute(pts, secs, list(DIRECTIONS), reference)
            hv = c.hypervolume / hv_max if hv_max else c.hypervolume
            curves[arm].append((c.cumulative_seconds, hv))
    target = float(np.median([hv[-1] for _, hv in curves.get("random", [])])) if curves.get("random") else math.nan
    tmax = max((s[-1] for cs in curves.values() for s, _ in cs if len(s)), default=0.0)
    grid = np.linspace(0.0, tmax, 2001)
    sampled = {arm: on_grid(cs, grid) for arm, cs in curves.items()}
    random_t = first_reach(grid, np.median(sampled["random"], axis=0), target) if curves.get("random") else math.nan
    random_final = np.array([hv[-1] for _, hv in curves.get("random", [])])
    rows = {}
    for arm, cs in curves.items():
        per_seed = [first_reach(secs, hv, target) for secs, hv in cs]
        finite = [x for x in per_seed if math.isfinite(x)]
        t = first_reach(grid, np.median(sampled[arm], axis=0), target)
        ratio = t / random_t if random_t and math.isfinite(random_t) else math.nan
        interval = (bootstrap_compute_ratio(sampled[arm], sampled["random"], random_final, grid, bootstrap)
                    if bootstrap and curves.get("random") else [math.nan, math.nan])
        rows[arm] = {
            "seeds": len(cs), "final_hv": summarize(hv[-1] for _, hv in cs),
            "total_train_seconds": summarize(s[-1] for s, _ in cs),
            "compute_to_target": t, "relative_to_random": ratio, "relative_interval_95": interval,
            "goal_met": bool(math.isfinite(ratio) and ratio <= GOAL_RATIO),
            "reached": len(finite), "time_to_target_per_seed": summarize(finite),
            "stopped_per_run": summarize(sum(map(stopped, trials)) for trials in runs_by_arm[arm]),
            "repeats_per_run": summarize(sum(map(repeated, trials)) for trials in runs_by_arm[arm]),
        }
    return {"reference": [float(x) for x in reference], "hv_max": hv_max, "target_hv": target, "goal_ratio": GOAL_RATIO,
            "random_compute_to_target": random_t, "bootstrap": bootstrap, "rows": rows, "_curves": curves}


def frontier_lost(runs: list[list[dict[str, Any]]], table: Any, reference: np.ndarray) -> dict[str, Any] | None:
    """What stopping cost the frontier, from the full-budget outcomes replay knows (None: nothing stopped).

    Per run: the hypervolume of the table outcomes of every trial it started (a stopped one at its
    full-budget value) against that of the trials it completed; lost = 1 - completed / started. A stopped
    trial is *wrongly stopped* when its full-budget outcome is dominated by none of the run's completed
    trials (run to its end, it would have moved the run's front)."""
    from recipesearch.analysis import hypervolume

    if not any(stopped(t) for trials in runs for t in trials):
        return None
    lost, n_stopped, wrong = [], 0, 0
    for trials in runs:
        started = [t for t in trials if t["state"] == "COMPLETE" or stopped(t)]
        every = np.array([table.get(t["params"]) for t in started], dtype=float).reshape(-1, 2)
        done = np.array([table.get(t["params"]) for t in started if t["state"] == "COMPLETE"], dtype=float).reshape(-1, 2)
        hv_all = hypervolume(every, list(DIRECTIONS), reference)
        hv_done = hypervolume(done, list(DIRECTIONS), reference) if len(done) else 0.0
        lost.append(1.0 - hv_done / hv_all if hv_all > 0 else 0.0)
        for t in started:
            if stopped(t):
                n_stopped += 1
                acc, secs = table.get(t["params"])
                wrong += not any(a >= acc and s <= secs for a, s in done)
    return {"lost": summarize(lost), "lost_per_run": lost, "stopped": n_stopped, "wrongly_stopped": wrong,
            "runs_losing": int(sum(x > 1e-12 for x in lost)), "runs": len(runs)}


def oracle_bound(space: Any, table: Any, reference: np.ndarray, hv_max: float, ana: dict[str, Any]) -> dict[str, Any] | None:
    """How much room the goal leaves on this table: the cheapest search that reaches random's final
    hypervolume knowing every outcome (``bench.replay.oracle_search``; the baselines it must run first
    included), as a multiple of random's compute, against the goal's allowance."""
    from bench.replay import oracle_search

    random_t = ana.get("random_compute_to_target", math.nan)
    if not (math.isfinite(ana.get("target_hv", math.nan)) and math.isfinite(random_t) and random_t > 0):
        return None
    required = [i for i in (table.index(p) for p in space.baselines()) if i is not None]
    found = oracle_search(table.points(), required, ana["target_hv"] * hv_max, reference, DIRECTIONS)
    if found is None:
        return None
    low = min(float(p.get("budget", math.inf)) for p in table.params)
    return {
        "seconds": found.seconds, "baseline_seconds": found.required_seconds, "exact": found.exact,
        "ratio": found.seconds / random_t, "baseline_ratio": found.required_seconds / random_t,
        "goal_seconds": GOAL_RATIO * random_t, "slack_seconds": GOAL_RATIO * random_t - found.seconds,
        "rows": [{"params": table.params[i], "algorithms": space.algorithms_on(table.params[i]),
                  "budget": table.params[i].get("budget"), "accuracy": table.outcomes[i][0],
                  "train_seconds": table.outcomes[i][1]} for i in found.rows],
        "cheapest_budget": low,
        "cheapest_budget_median_seconds": float(np.median([secs for p, (_, secs) in zip(table.params, table.outcomes)
                                                           if p.get("budget") == low])),
    }


def cut_at_compute(trials: list[dict[str, Any]], budget: float) -> list[dict[str, Any]]:
    """The search as if stopped by a compute budget: its trials until the one whose compute reaches
    ``budget`` (included: it was running when the budget ran out)."""
    spent = np.cumsum(np.nan_to_num([t["train_seconds"] for t in trials], nan=0.0))
    return trials[: int(np.searchsorted(spent, budget)) + 1]


def equalise_compute(every: dict[str, Any]) -> float:
    """Cut the equal-compute arms' searches at random's median compute per search (returned)."""
    budget = float(np.median([sum(np.nan_to_num([t["train_seconds"] for t in run], nan=0.0))
                              for run in every["random"]["runs"]]))
    for label, v in every.items():
        if label.endswith(LONG_SUFFIX):
            v["runs"] = [cut_at_compute(run, budget) for run in v["runs"]]
            v["trials_used"] = summarize(len(run) for run in v["runs"])
    return budget


def run_real_part(quick: bool, seeds_real: int | None) -> dict[str, Any]:
    """A) the real searches: every arm of ``REAL_ARMS`` with each seed, analysed like the replay."""
    from recipesearch.analysis import reference_point

    seeds = list(range(seeds_real or (1 if quick else 3)))
    runs = run_real(SAMPLERS, seeds, quick)
    ok = [r for r in runs if "trials" in r]
    allpts = np.array([[t["accuracy"], t["train_seconds"]] for r in ok for t in r["trials"]], dtype=float).reshape(-1, 2)
    ref_real = reference_point(allpts, list(DIRECTIONS))
    by = {s: [r["trials"] for r in ok if r["sampler"] == s] for s in SAMPLERS}
    ana_r = analyse({s: v for s, v in by.items() if v}, ref_real)
    return {
        "space": str(DIGITS_SPACE.relative_to(ROOT)) + (" (quick: budgets 0.25/0.5, 10 trials)" if quick else ""),
        "seeds": len(seeds), "runs": runs, "analysis": {k: v for k, v in ana_r.items() if k != "_curves"},
        "curves": {s: [[list(map(float, c[0])), list(map(float, c[1]))] for c in cs] for s, cs in ana_r["_curves"].items()},
    }


def run(quick: bool = False, seeds_real: int | None = None, seeds_replay: int | None = None,
        skip_real: bool = False, rerecord: bool = False) -> dict[str, Any]:
    from recipesearch.analysis import hypervolume, reference_point

    env = environment()
    result: dict[str, Any] = {"name": NAME, "quick": quick, "environment": env}
    # B first: cheap once the table exists, and it must not wait for hours of real searches.
    use_quick, space, table, meta = load_or_record(quick, rerecord)
    n_trials = min(26, max(8, len(table) // 3))
    seeds_replay = seeds_replay or (10 if quick else 20)
    rep = run_replay(use_quick, seeds_replay, replay_plan(n_trials))
    peers = run_peers(space, table, seeds_replay, n_trials)  # C
    ref = reference_point(table.points(), list(DIRECTIONS))
    hv_max = hypervolume(table.points(), list(DIRECTIONS), ref)
    every = {**rep, **peers}
    budget = equalise_compute(every)
    ana = analyse({s: v["runs"] for s, v in every.items()}, ref, hv_max)
    result["replay"] = {
        "table": meta, "table_rows": len(table), "grid": {"budgets": space.budgets, "algorithms": list(space.algorithms)},
        "n_trials": n_trials, "seeds": seeds_replay, "concurrency": space.concurrency,
        "arms": {label: {"sampler": ARMS[arm][0], "scheduler": scheduler_label(ARMS[arm][1]), "trials": n}
                 for label, (arm, n) in replay_plan(n_trials).items() if label in rep},
        "trials": {s: v["trials"] for s, v in every.items()}, "long_factor": LONG_FACTOR, "compute_budget": budget,
        "trials_used": {s: v["trials_used"] for s, v in every.items() if "trials_used" in v},
        "scheduler": {"reduction_factor": space.scheduler.reduction_factor, "rungs": rung_fractions(space)},
        "hit_rate": {s: v["hit_rate"] for s, v in every.items()}, "replay_seconds": {s: v["seconds"] for s, v in every.items()},
        "sampler_notes": sampler_notes(n_trials, len(space.baselines()), {a: rep[a] for a in ARMS if a in rep}),
        "frontier_lost": {a: frontier_lost(v["runs"], table, ref) for a, v in every.items()},
        "rung_informativeness": rung_informativeness(table),
        "oracle": oracle_bound(space, table, ref, hv_max, ana),
        "peer": {"synetune_version": synetune_version(), "arms": list(peers), "workers": 2},
        "analysis": {k: v for k, v in ana.items() if k != "_curves"},
        # the trials themselves are not kept (megabytes): replay is deterministic, the same seeds give them again
        "curves": {s: [[list(map(float, c[0])), list(map(float, c[1]))] for c in cs] for s, cs in ana["_curves"].items()},
    }
    # A) real searches (skipped: keep the previous run's, if any)
    if skip_real:
        from bench.common import load_result

        previous = load_result(NAME) or {}
        if previous.get("real"):
            result["real"] = {**previous["real"], "from_previous_run": previous["real"].get("from_previous_run")
                              or previous.get("finished")}
    else:
        result["real"] = run_real_part(quick, seeds_real)
    result["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    return result


# rendering ----------------------------------------------------------------------------------------------


def _step_median(curves: list[list[list[float]]], grid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Median and IQR over runs of step functions hv(t) sampled on ``grid``."""
    from recipesearch.analysis.hypervolume_reach import on_grid

    a = on_grid([(np.asarray(s), np.asarray(h)) for s, h in curves], grid)
    return np.median(a, 0), np.percentile(a, 25, 0), np.percentile(a, 75, 0)


def plot(part: dict[str, Any], name: str, title: str, normalised: bool) -> str | None:
    """Median (IQR band) over seeds of hypervolume reached within t seconds of training, per arm.

    Normalised (replay): plots the gap to the table's best front, 1 - HV/HV_max, on a log axis, where the
    arms differ; raw (real runs): plots the hypervolume itself. FIFO arms solid; scheduler arms (dashed) and
    peers (dotted) in their longer runs only, whose first trials are about their short runs' (fewer lines).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = part.get("curves") or {}
    if not curves:
        return None
    tmax = max(c[0][-1] for cs in curves.values() for c in cs if c[0])
    grid = np.linspace(0, tmax, 400)
    fig, ax = plt.subplots(figsize=(10.5, 4.6))
    tf = (lambda v: np.maximum(1.0 - v, 1e-4)) if normalised else (lambda v: v)
    for arm, cs in curves.items():
        cs = [c for c in cs if c[0]]
        if not cs or (arm_of(arm) in LONG_ARMS and arm == arm_of(arm)):
            continue
        med, lo, hi = _step_median(cs, grid)
        style = ":" if arm_of(arm) in (SYNETUNE, CONTROL) else "--" if arm_of(arm) in LONG_ARMS else "-"
        (line,) = ax.plot(grid, tf(med), label=f"{arm} ({len(cs)} run{'s' if len(cs) > 1 else ''})", ls=style,
                          lw=2.2 if arm == "random" else 1.4)
        if len(cs) > 2 and arm_of(arm) in ("random", "tpe", "random+moasha", "promote", SYNETUNE):
            ax.fill_between(grid, tf(lo), tf(hi), color=line.get_color(), alpha=0.10)
    target = part["analysis"].get("target_hv")
    if target and math.isfinite(target):
        ax.axhline(tf(target), color="k", ls=":", lw=0.8, label="random's final HV (median)")
    if normalised:
        ax.set_yscale("log")
        ax.set_ylim(top=1.05)
    ax.set_xlabel("cumulative training time of the search's trials (s)")
    ax.set_ylabel("1 - hypervolume / table's best (log)" if normalised else "hypervolume")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: the curves fill the axes
    fig.tight_layout()
    return save_figure(fig, name)


def _ratio_cell(row: dict[str, Any]) -> str:
    ratio, (lo, hi) = row["relative_to_random"], row.get("relative_interval_95") or [math.nan, math.nan]
    if not math.isfinite(ratio):  # some resamples may still reach it: say so
        return "not reached" + (f" [{fmt(lo, '.2f')}–never]" if math.isfinite(lo) else "")
    spread = f" [{fmt(lo, '.2f')}–{fmt(hi, '.2f') if math.isfinite(hi) else 'never'}]" if not math.isnan(lo) else ""
    return f"{ratio:.2f}x{spread}"


def _interval_meets_goal(row: dict[str, Any]) -> bool:
    """The bootstrap interval's upper end is within the goal (not just the median curve's ratio)."""
    hi = (row.get("relative_interval_95") or [math.nan, math.nan])[1]
    return math.isfinite(hi) and hi <= GOAL_RATIO


def _goal_cell(row: dict[str, Any]) -> str:
    if not row.get("goal_met"):
        return "not met"
    return "met" + (" (interval too)" if _interval_meets_goal(row) else " (not across the interval)")


def _lost_cell(lost: dict[str, Any] | None) -> str:
    if not lost:
        return "– (stops nothing)"
    return (f"{fmt_summary(lost['lost'], '.1%', 'iqr')}; {lost['wrongly_stopped']} of {lost['stopped']} stopped "
            f"trials wrongly; {lost['runs_losing']}/{lost['runs']} runs lose some")


def _replay_table(rep: dict[str, Any]) -> str:
    analysis, arms, lost = rep["analysis"], rep.get("arms") or {}, rep.get("frontier_lost") or {}
    trials = rep.get("trials") or {}
    rows = []
    for arm, r in analysis["rows"].items():
        sampler, scheduler = (arms[arm]["sampler"], arms[arm]["scheduler"]) if arm in arms else \
            ("random (Syne Tune's)", "Syne Tune MOASHA" if arm_of(arm) == SYNETUNE else "our moasha rule")
        t = r["compute_to_target"]
        used = (rep.get("trials_used") or {}).get(arm)
        n = f"{fmt_summary(used, '.0f', 'iqr')} (cap {trials[arm]})" if used else trials.get(arm, rep["n_trials"])
        rows.append([arm, sampler, scheduler, n, r["seeds"],
                     fmt(t, ".0f") if math.isfinite(t) else "not reached",
                     _ratio_cell(r), _goal_cell(r) if arm != "random" else "–", f"{r['reached']}/{r['seeds']}",
                     fmt_summary(r["total_train_seconds"], ".0f", "iqr"), fmt_summary(r["final_hv"], ".3f", "iqr"),
                     fmt_summary(r.get("stopped_per_run") or {}, ".0f", "iqr"), _repeats_cell(r),
                     _lost_cell(lost.get(arm))])
    return md_table(["arm", "sampler", "scheduler", "trials", "seeds",
                     "train s to reach random's final HV (median curve)",
                     "x random's compute [95% bootstrap over seeds]", f"goal <= {GOAL_RATIO:.2f}x",
                     "seeds reaching it", "compute per search (train s) [IQR]", "final HV / table's [IQR]",
                     "stopped trials per search [IQR]", "repeated proposals per search, not trained [IQR]",
                     "frontier lost to stopping: median [IQR]"], rows)


def _repeats_cell(row: dict[str, Any]) -> str:
    """Results from before the loop answered repeats (every repeat trained again) have no count."""
    return fmt_summary(row["repeats_per_run"], ".0f", "iqr") if row.get("repeats_per_run") else "– (trained again)"


def _real_table(analysis: dict[str, Any]) -> str:
    rows = []
    for s, r in analysis["rows"].items():
        t = r["compute_to_target"]
        rows.append([s, r["seeds"], fmt_summary(r["final_hv"], ".4g", "iqr"),
                     fmt_summary(r["total_train_seconds"], ".0f", "iqr"),
                     fmt(t, ".0f") if math.isfinite(t) else "not reached",
                     fmt(r["relative_to_random"], ".2f"),
                     f"{r['reached']}/{r['seeds']}", fmt_summary(r["time_to_target_per_seed"], ".0f", "iqr"),
                     _repeats_cell(r)])
    return md_table(["sampler", "seeds", "final hypervolume [IQR]", "compute spent (train s) [IQR]",
                     "train s to reach random's final HV (median curve)", "relative to random", "seeds reaching it",
                     "train s to reach it, those seeds [IQR]", "repeated proposals per search, not trained [IQR]"],
                    rows)


def _oracle_text(rep: dict[str, Any]) -> list[str]:
    """How far the goal is from what any search could do on this table (``oracle_bound``)."""
    o = rep.get("oracle")
    if not o:
        return []
    per_run = o["cheapest_budget_median_seconds"]
    return ["", (
        f"**Room for the goal on this table.** The cheapest search that reaches random's final hypervolume, "
        f"for a searcher that knew every outcome, trains the baselines ({o['baseline_seconds']:.1f} s, "
        f"{o['baseline_ratio']:.2f}x of random's compute, run first by every arm) and then "
        + (", ".join(f"{'+'.join(r['algorithms']) or 'base'} at budget {r['budget']:g} ({r['train_seconds']:.2f} s)"
                     for r in o["rows"]) or "nothing")
        + f": {o['seconds']:.1f} s, **{o['ratio']:.2f}x** of random's compute"
        + (" (exact: every subset of the table's front tried; a dominated recipe is never needed, its "
           "dominator being cheaper)" if o["exact"] else " (a greedy upper bound: the front was too large to enumerate)")
        + f". The goal ({GOAL_RATIO:.2f}x = {o['goal_seconds']:.1f} s) therefore leaves "
        f"{o['slack_seconds']:.1f} s for everything a search trains outside that set — about "
        f"{max(0.0, o['slack_seconds']) / per_run:.0f} runs at the cheapest budget ({o['cheapest_budget']:g}: "
        f"{per_run:.2f} s each, median) — "
        "before it has found those recipes among the table's; a sampler that learns from its own trials cannot "
        "know them in advance."
    )]


def _rungs_text(rep: dict[str, Any]) -> list[str]:
    """What the rungs know: per budget, the median accuracy at each rung and at the end, and how well a
    rung's ranking predicts the end's."""
    info = rep.get("rung_informativeness") or []
    if not info:
        return []
    by: dict[float, list[dict[str, Any]]] = {}
    for r in info:
        by.setdefault(r["budget"], []).append(r)
    cells = []
    for budget, rows in by.items():
        path = " → ".join(f"{r['median_accuracy']:.2f}" for r in rows) + f" → {rows[0]['median_final_accuracy']:.2f}"
        rhos = ", ".join(f"{r['spearman_with_final']:.2f}" for r in rows)
        cells.append(f"budget {budget:g}: {path} (ρ {rhos})")
    fractions = ", ".join(f"{r['fraction']:.3g}" for r in next(iter(by.values())))
    first = [rows[0]["median_accuracy"] for rows in by.values()]
    text = ("**What the rungs see** (median test accuracy over the budget's recipes at rungs "
            f"{fractions} and at the end; ρ: Spearman rank correlation of a rung's accuracy with the end's, over "
            "those recipes): " + "; ".join(cells) + ".")
    if min(first) < 0.2:  # near chance (10 classes) somewhere: say why and what the late-rung arm is for
        text += (" Digits runs are short (a few dozen to ~150 steps), so the first rung comes after a handful "
                 "of steps, inside the LR warmup, where recipes are still near chance (0.10) at the small "
                 "budgets: there MO-ASHA ranks mostly on train_seconds. The arm `random+moasha, rung 1/3 only` "
                 "(`min_fraction: 1/3`) decides at the later rung only.")
    return ["", text]


def _peer_text(rep: dict[str, Any]) -> list[str]:
    peer = rep.get("peer") or {}
    if not peer.get("arms"):
        return ["", "_Syne Tune was not installed when this ran (`pip install -e '.[bench]'`): no peer rows._"]
    return ["", f"**Peer: Syne Tune {peer['synetune_version']}'s MOASHA** (`syne_tune.optimizer.schedulers."
            "multiobjective.MOASHA`, Schmucker et al. 2021) on the same table, the same "
            f"{rep['n_trials']} trials and, like our scheduler arms, at random's compute, {rep['seeds']} seeds: objectives error = 1 - accuracy and "
            "train_seconds, both minimised; `time_attr` = rung level 1, 3, 9 (after 1/9, 1/3 and all of the "
            "steps), `grace_period` 1, `max_t` 9, `reduction_factor` 3. Not through Syne Tune's `Tuner` and "
            "simulator backend: those advance simulated time by the tuner's polling interval (and by real "
            "time spent outside the backend), so a trial of well under a second would reach its end before "
            "its STOP is read; instead `bench/search_efficiency.py` (`peer_run`) drives MOASHA's own API with "
            f"an explicit event clock, {peer['workers']} workers, asynchronous: each trial's recorded results "
            "arrive at its start time + their train_seconds, the earliest goes to `on_trial_result`, a STOP "
            "(and the last level) to `on_trial_remove` as its `Tuner` does, and a stopped trial frees its "
            "worker at once having cost its last rung's train_seconds. Configurations come from MOASHA's "
            "`suggest` (uniform over the grid; numpy seeded per seed), the first three replaced by the "
            "baseline recipes as in our loop (to Syne Tune they are ordinary trials: it may stop them). "
            "What differs from ours: its rung ranks all trials at a level together, whatever their budget "
            "(ours compares one budget's trials), stops a newcomer whose rank is worse than the best third "
            "from the second trial at a rung on (ours lets all go on while fewer than 3 reported), and orders "
            "a front by an epsilon-net on the raw objectives (ours: hypervolume contribution on scaled ones). "
            f"The control row `{CONTROL}` runs our rule (`analysis.rungs.decide`) in that same driver on the "
            "same configurations, so its gap to Syne Tune's row is the rules' and its gap to `random+moasha` "
            "is the drivers' (event clock vs the loop's in-process executor, Optuna's random sampler)."]


def render(result: dict[str, Any]) -> str:
    parts = [
        "**What**: hypervolume of the (accuracy ↑, train_seconds ↓) front against the cumulative training "
        "time the search has spent (a stopped trial counts the compute it used), for the samplers `tpe` "
        "(multivariate TPE), `nsga2`, `gp`, `random` and the hand `sweep` strategy, and for the schedulers "
        "(`scheduler:` of the space file): MO-ASHA stopping at rungs (`moasha`), promotion across budgets "
        "(`promote`), both; headline: the training time each arm needs to reach the final hypervolume of "
        "random search (median over random's seeds of its final hypervolume), read off the arm's median "
        "curve over seeds (hypervolume reached within t seconds of training), as a multiple of random's "
        "own; < 1 means it gets there with less compute.",
    ]
    rep = result.get("replay")
    if rep:
        t = rep["table"]
        sched = rep.get("scheduler") or {}
        best = min(((a, r["relative_to_random"]) for a, r in rep["analysis"]["rows"].items()
                    if a != "random" and math.isfinite(r["relative_to_random"])), key=lambda x: x[1], default=None)
        parts += [
            "",
            "### Replay (many seeds, seconds each)",
            f"**How**: the discrete digits space budgets {rep['grid']['budgets']} × switches of "
            f"{', '.join(rep['grid']['algorithms'])} (defaults) over `recipes/digits_baseline.yaml` has "
            f"{rep['table_rows']} recipes; each was trained once (2 processes × 1 thread, like a search at "
            f"concurrency 2; {t.get('train_seconds_total', math.nan):.0f} s of training, recorded "
            f"{t.get('recorded', '?')}) into `{t.get('path')}`, with its learning curve: test accuracy (the "
            f"table's split) and train_seconds so far after "
            f"{', '.join(f'{f:.3g}' for f in sched.get('rungs', []))} of its steps (the trainer pauses its "
            f"clock to evaluate; eta {sched.get('reduction_factor', '?')}). Every arm then searched that "
            f"table (`bench/replay.py`: the search loop `SearchLoop` without Ray, baselines first, "
            f"{rep['concurrency']} trials asked per round, lookups by the canonical params key; with a "
            "scheduler, the executor reports the recipe's recorded rung values to the loop's `on_rung` in "
            "order and stops the trial when told, so the loop's own MO-ASHA and promotion code decides) with "
            f"{rep['seeds']} seeds × {rep['n_trials']} trials (stopped ones count). The scheduler arms and the "
            f"peers also ran *at random's compute* (rows '{LONG_SUFFIX.strip()}'): up to "
            f"{rep.get('long_factor', LONG_FACTOR)}× the trials, each search cut where its compute first reached "
            f"random's median compute per search ({rep.get('compute_budget', math.nan):.0f} train s), because a "
            "stopped trial costs a fraction of a run but counts as a whole trial: at the same trial count a "
            "pruning search ends having spent far less compute, and the goal is about compute (the target "
            "stays random's final hypervolume at its trial count; the 'trials' column gives the median trials "
            "those searches used). Hypervolume is divided by the "
            f"whole table's (1.0 = the best front of this space); reference point (accuracy, seconds) = "
            f"({rep['analysis']['reference'][0]:.3f}, {rep['analysis']['reference'][1]:.1f}). The interval is "
            f"the 2.5–97.5% percentiles over {rep['analysis'].get('bootstrap', BOOTSTRAP)} bootstrap "
            "resamples of the seeds (the arm's and random's, the target recomputed each time; 'never': the "
            "resampled median curve did not reach it); random's own interval is the noise floor. *Frontier "
            "lost*: per search, 1 − HV(full-budget outcomes of the trials it completed) / HV(full-budget "
            "outcomes of every trial it started, stopped ones at the value they would have reached), and how "
            "many stopped trials were *wrongly* stopped (their full outcome dominated by none of the search's "
            "completed trials). Exact-hit rate: "
            f"{', '.join(f'{s} {v:.0%}' for s, v in rep['hit_rate'].items())}. Compute of the replay itself: "
            f"{', '.join(f'{s} {v:.1f} s' for s, v in rep['replay_seconds'].items())}.",
            *_table_choice_text(rep),
            "",
            _replay_table(rep),
            *_oracle_text(rep),
            *_rungs_text(rep),
            *_peer_text(rep),
            "",
            *[f"- {n}" for n in rep.get("sampler_notes", [])],
            "",
            _replay_goal_text(rep["analysis"]["rows"], best),
        ]
        img = plot(rep, f"{NAME}_replay", f"replay: {rep['seeds']} seeds per arm (median; IQR band for a few)", True)
        if img:
            parts += ["", f"![hypervolume vs compute, replay]({img})"]
    real = result.get("real")
    if real:
        errors = [f"{r['sampler']} seed {r['seed']}: {r['error']}" for r in real["runs"] if "error" in r]
        walls = summarize(r["wall_seconds"] for r in real["runs"] if "wall_seconds" in r)
        loads = summarize(r["load"][0] for r in real["runs"] if r.get("load"))
        parts += [
            "",
            "### Real searches (trials really train)",
            f"**How**: `recipesearch.engine.api.search` on `{real['space']}` with only the sampler and the "
            f"scheduler swapped ({_arms_text({r['sampler'] for r in real['runs']})}; "
            "stopped trials count the compute they used), "
            f"{real['seeds']} seed(s) per sampler, samplers interleaved within a seed; trials in completion "
            f"order; reference point = that of all real trials together "
            f"({real['analysis']['reference'][0]:.3f}, {real['analysis']['reference'][1]:.1f}). Wall time per "
            f"search {fmt_summary(walls, '.0f', 'range')} s; load average (1 min) at each search's start "
            f"{fmt_summary(loads, '.1f', 'range')} ({os.cpu_count()} cores here; above that, other work "
            "shared the machine and train_seconds are longer than on an idle one, arms alike as they are "
            "interleaved within a seed). Run dirs (trials.csv, report) under `runs/bench-search/`."
            + (f" Errors: {'; '.join(errors)}." if errors else "")
            + (f" These searches are from the run of {real['from_previous_run']}; only the replay above was run "
               "again since (`--skip-real`)." if real.get("from_previous_run") else "")
            + (" With one seed and a few trials per sampler these rows are anecdotes (trial order under Ray and "
               "noisy train_seconds also differ run to run); the replay above is the sampler comparison."
               if real["seeds"] < 3 else ""),
            "",
            _real_goal_text(real["analysis"]),
            "",
            _real_table(real["analysis"]),
        ]
        img = plot(real, f"{NAME}_real", "real searches on the digits space (median over seeds)", False)
        if img:
            parts += ["", f"![hypervolume vs compute, real runs]({img})"]
    else:
        parts += ["", "_Real searches were not run in this invocation._"]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seeds-real", type=int)
    p.add_argument("--seeds-replay", type=int)
    p.add_argument("--skip-real", action="store_true", help="replay only (the real searches of the last run are kept)")
    p.add_argument("--rerecord", action="store_true", help="train the replay table again")
    p.add_argument("--real-only", action="store_true",
                   help="only the real searches (the last run's replay results are kept)")
    a = p.parse_args(argv)
    from bench.common import load_result, save_result

    if a.real_only and load_result(NAME):
        res = {**load_result(NAME), "real": run_real_part(a.quick, a.seeds_real), "environment": environment(),
               "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    else:
        res = run(a.quick, a.seeds_real, a.seeds_replay, a.skip_real, a.rerecord)
    save_result(NAME, res)
    print(render(res))


if __name__ == "__main__":
    main()
