"""search_efficiency's numbers, shared by parts A, B and C: hypervolume-vs-compute curves per arm, the
compute to reach random search's final hypervolume (``recipesearch.analysis.hypervolume_reach``), the
frontier lost to stopped trials, and the oracle's lower bound on that compute.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from bench.common import summarize
from bench.search_efficiency.config import BOOTSTRAP, DIRECTIONS, GOAL_RATIO, LONG_SUFFIX, repeated, stopped


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
    hypervolume knowing every outcome (``bench.replay_hypervolume.oracle_search``; the baselines it must run first
    included), as a multiple of random's compute, against the goal's allowance."""
    from bench.replay_hypervolume import oracle_search

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
