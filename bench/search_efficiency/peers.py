"""Part C of search_efficiency: Syne Tune's own MOASHA scheduler on the replay table, driven through its
scheduler API by an explicit event clock, beside our MO-ASHA rule in the same driver (the control).
"""
from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from bench.search_efficiency.config import CONTROL, LONG_FACTOR, SYNETUNE, long_label
from bench.search_efficiency.replay_arms import rung_fractions


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

    from bench.replay_table import param_value

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
