"""search_efficiency's run and command line: parts B and C (replay, peers), then A (real searches).
"""
from __future__ import annotations

import argparse
import time
from typing import Any

from bench.common import environment
from bench.search_efficiency.analysis import analyse, equalise_compute, frontier_lost, oracle_bound
from bench.search_efficiency.config import ARMS, DIRECTIONS, LONG_FACTOR, NAME, scheduler_label
from bench.search_efficiency.peers import run_peers, synetune_version
from bench.search_efficiency.real import run_real_part
from bench.search_efficiency.render import render
from bench.search_efficiency.replay_arms import (
    load_or_record,
    replay_plan,
    run_replay,
    rung_fractions,
    rung_informativeness,
    sampler_notes,
)


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


def main(argv: list[str] | None = None) -> None:
    from bench import search_efficiency

    p = argparse.ArgumentParser(description=search_efficiency.__doc__.splitlines()[0])
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
