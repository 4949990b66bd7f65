"""bench/replay.py with learning curves: the search loop's own scheduler (MO-ASHA stopping, promotion across
budgets) replayed over a hand-made table whose rows hold rung values. No training, no Ray.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict
from typing import Any

import pytest

from bench.replay import TrialRecord, enumerate_space, grid_space, replay, rung_reports, write_table
from bench.replay_hypervolume import hv_curves
from bench.replay_table import Table

BASE = {
    "model": {"name": "cnn", "width": 8}, "data": {"name": "digits"},
    "optimizer": {"name": "sgd", "lr": 0.1}, "max_duration": 4, "batch_size": 32, "seed": 0, "threads": 1,
    "device": "cpu",
}
RUNGS = (1 / 9, 1 / 3)
BAD_LR = 2  # the LR multiplier whose recipes are dominated at every rung (low accuracy, twice as slow)


def make_space(budgets: list[float]) -> Any:
    return grid_space(BASE, budgets=budgets, algorithms=["label_smoothing", "channels_last"],
                      hparams={"optimizer.lr": {"grid": [0.5, 1, BAD_LR]}}, trials=20, concurrency=2)


def outcome(params: dict[str, Any]) -> tuple[float, float, list[list[float]]]:
    """(accuracy, train_seconds, rungs) of a recipe: a fixed pseudo-random spread among the good recipes;
    the bad LR learns little and takes twice as long. Accuracy climbs with the share of steps."""
    from recipesearch.space import params_key

    h = int(hashlib.sha256(params_key(params).encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    bad = params["optimizer.lr"] == BAD_LR
    acc = 0.2 + 0.05 * h if bad else 0.8 + 0.1 * params["budget"] + 0.05 * h
    fast = 0.8 if params.get("alg.label_smoothing") else 1.0
    secs = 10 * params["budget"] * fast * (2 if bad else 1) * (0.9 + 0.2 * h)
    return acc, secs, [[f, acc * (0.5 + 0.5 * f), secs * f] for f in RUNGS]


def curve_table(space: Any) -> Table:
    return Table((p, *outcome(p)) for p in enumerate_space(space))


def _dump(records: list[TrialRecord]) -> str:
    return json.dumps([asdict(r) for r in records])  # NaN-safe equality (a stopped trial's accuracy is NaN)


def _reached(r: TrialRecord, fraction: float) -> bool:
    return r.state == "COMPLETE" or (r.state == "PRUNED" and r.pruned_at >= fraction - 1e-9)


def test_moasha_stops_dominated_recipes_at_their_rung():
    space = make_space([1.0])
    table = curve_table(space)
    records, hit = replay(space, table, "random", seed=3, n_trials=20, concurrency=2, scheduler="moasha")
    assert hit == 1.0 and len(records) == 20
    pruned = [r for r in records if r.state == "PRUNED" and r.duplicate_of is None]  # not the repeats
    assert any(r.params["optimizer.lr"] == BAD_LR for r in pruned), "a dominated recipe must be stopped"
    baseline = records[0]
    assert baseline.state == "COMPLETE"  # baselines never stop
    # a bad recipe with at least n // eta strictly better trials already at its rung cannot go on (its rung
    # point is dominated by each of them); trials report in trial order in the in-process executor
    search = sorted((r for r in records[1:] if r.duplicate_of is None), key=lambda r: r.number)
    for i, r in enumerate(search):
        if r.params["optimizer.lr"] != BAD_LR:
            continue
        for fraction in RUNGS:
            if not _reached(r, fraction) and r.pruned_at < fraction:
                break
            before = [u for u in search[:i] if _reached(u, fraction)]
            n = len(before) + 1
            keep = n if n < 3 else n // 3
            if sum(u.params["optimizer.lr"] != BAD_LR for u in before) >= keep:
                assert r.state == "PRUNED" and r.pruned_at <= fraction + 1e-9, (r, fraction)
                break


def test_a_stopped_trial_costs_its_last_rungs_seconds():
    space = make_space([1.0])
    table = curve_table(space)
    records, _ = replay(space, table, "random", seed=3, n_trials=20, concurrency=2, scheduler="moasha")
    pruned = [r for r in records if r.state == "PRUNED" and r.duplicate_of is None]  # not the repeats
    assert pruned
    for r in pruned:
        curve = dict((f, (a, s)) for f, a, s in table.curves[table.index(r.params)])
        assert r.pruned_at in curve and r.train_seconds == curve[r.pruned_at][1]
        assert math.isnan(r.accuracy)  # no full-budget result: never on the front
    for r in records:
        if r.state == "COMPLETE":
            assert (r.accuracy, r.train_seconds) == table.get(r.params)
    # the compute curve counts the partial time; the hypervolume only the completed trials
    (secs, hv), = hv_curves([records], reference=[0.0, 100.0])
    assert secs[-1] == pytest.approx(sum(r.train_seconds for r in records))
    assert hv[-1] == pytest.approx(hv_curves([[r for r in records if r.state == "COMPLETE"]], [0.0, 100.0])[0][1][-1])


@pytest.mark.parametrize("scheduler", ["moasha", "promote", "moasha+promote"])
def test_replay_with_a_scheduler_is_deterministic(scheduler):
    space = make_space([0.25, 0.5, 1.0])
    table = curve_table(space)
    runs = [replay(space, table, "tpe", seed=5, n_trials=20, concurrency=2, scheduler=scheduler,
                   options={"n_startup_trials": 6})[0] for _ in range(2)]
    assert _dump(runs[0]) == _dump(runs[1])
    other = replay(space, table, "tpe", seed=6, n_trials=20, concurrency=2, scheduler=scheduler,
                   options={"n_startup_trials": 6})[0]
    assert _dump(other) != _dump(runs[0])
    assert space.scheduler.name == "fifo"  # the space itself is left as it was


def test_promote_queues_the_best_at_the_next_budget():
    space = make_space([0.25, 0.5, 1.0])
    table = curve_table(space)
    records, _ = replay(space, table, "random", seed=2, n_trials=20, concurrency=2, scheduler="promote")
    by_number = {r.number: r for r in records}
    search = [r for r in records if r.number >= len(space.budgets)]  # after the baselines
    promoted = [r for r in search if r.promoted_from is not None]
    assert promoted and all(r.state == "COMPLETE" or r.duplicate_of is not None for r in records)
    assert all(r.params["budget"] == 0.25 for r in search if r.promoted_from is None)  # new ones start cheap
    budgets = sorted(space.budgets)
    for r in promoted:
        parent = by_number[r.promoted_from]
        assert r.params["budget"] == budgets[budgets.index(parent.params["budget"]) + 1]
        assert {k: v for k, v in r.params.items() if k != "budget"} == \
            {k: v for k, v in parent.params.items() if k != "budget"}
        assert parent.params["optimizer.lr"] != BAD_LR  # a dominated recipe is never among the best third


def test_fifo_ignores_the_curves_and_a_pruning_scheduler_needs_them():
    space = make_space([1.0])
    with_curves = curve_table(space)
    plain = Table((p, *outcome(p)[:2]) for p in enumerate_space(space))
    fifo_a, _ = replay(space, with_curves, "random", seed=1, n_trials=12)
    fifo_b, _ = replay(space, plain, "random", seed=1, n_trials=12)
    assert _dump(fifo_a) == _dump(fifo_b)
    with pytest.raises(ValueError, match="no rung value"):
        replay(space, plain, "random", seed=1, n_trials=12, scheduler="moasha")


def test_rung_column_round_trips_through_csv(tmp_path):
    space = make_space([0.5, 1.0])
    grid = enumerate_space(space)
    values = [outcome(p) for p in grid]
    records = [TrialRecord(i, p, acc, secs) for i, (p, (acc, secs, _)) in enumerate(zip(grid, values))]
    path = tmp_path / "table.csv"
    write_table(records, path, {i: {"rungs": json.dumps(v[2])} for i, v in enumerate(values)})
    table = Table.read_csv(path, space)
    assert table.has_curves and len(table) == len(grid)
    for p, (acc, secs, rungs) in zip(grid, values):
        assert table.get(p) == (acc, secs)
        assert table.curves[table.index(p)] == tuple(tuple(r) for r in rungs)
    reports = rung_reports(table.curves[0], RUNGS)
    assert [r["rung"] for r in reports] == list(RUNGS) and set(reports[0]) == {"rung", "rung_accuracy", "train_seconds"}


# the benchmark's analysis and its Syne Tune peer (bench/search_efficiency.py) ------------------------------


def _row(params: dict[str, Any], state: str, table: Table) -> dict[str, Any]:
    acc, secs = table.get(params)
    if state == "PRUNED":
        return {"accuracy": math.nan, "train_seconds": table.curves[table.index(params)][0][2], "state": state,
                "params": params}
    return {"accuracy": acc, "train_seconds": secs, "state": state, "params": params}


def test_frontier_lost_counts_stopped_trials_that_would_have_moved_the_front():
    from bench.search_efficiency.analysis import frontier_lost

    space = make_space([1.0])
    table = curve_table(space)
    grid = enumerate_space(space)
    good = sorted((p for p in grid if p["optimizer.lr"] != BAD_LR), key=lambda p: -table.get(p)[0])
    bad = [p for p in grid if p["optimizer.lr"] == BAD_LR]
    ref = [0.0, 100.0]
    # stopping the most accurate recipe loses front; stopping a dominated one loses nothing
    wrong = frontier_lost([[_row(good[0], "PRUNED", table), _row(good[1], "COMPLETE", table)]], table, ref)
    assert wrong["wrongly_stopped"] == 1 and wrong["lost"]["median"] > 0
    right = frontier_lost([[_row(good[0], "COMPLETE", table), _row(bad[0], "PRUNED", table)]], table, ref)
    assert right["wrongly_stopped"] == 0 and right["lost"]["median"] == 0 and right["stopped"] == 1
    assert frontier_lost([[_row(good[0], "COMPLETE", table)]], table, ref) is None  # nothing stopped


def test_compute_ratio_to_random_and_goal():
    from bench.search_efficiency.analysis import analyse
    from recipesearch.analysis.pareto import pareto_front_order

    space = make_space([1.0])
    table = curve_table(space)
    records = [replay(space, table, "random", seed=s, n_trials=12)[0] for s in range(6)]
    runs = [[{"accuracy": r.accuracy, "train_seconds": r.train_seconds, "state": r.state, "params": r.params}
             for r in recs] for recs in records]
    # the same searches after a failed trial that cost 100 s: the curve moves right by 100 s
    late = [[{"accuracy": math.nan, "train_seconds": 100.0, "state": "FAIL", "params": {}}, *run] for run in runs]
    # the table's best front, cheapest first: reaches any search's hypervolume soonest
    pts = table.points()
    front = [{"accuracy": pts[i, 0], "train_seconds": pts[i, 1], "state": "COMPLETE", "params": {}}
             for i in pareto_front_order(pts, ["maximize", "minimize"])]
    oracle = [front] * 6
    out = analyse({"random": runs, "late": late, "oracle": oracle}, reference=[0.0, 100.0], bootstrap=50)
    rows, t_random = out["rows"], out["random_compute_to_target"]
    step = max(sum(t["train_seconds"] for t in run) for run in late) / 2000  # the curves' grid
    assert rows["random"]["relative_to_random"] == 1.0 and not rows["random"]["goal_met"]
    assert rows["late"]["compute_to_target"] == pytest.approx(t_random + 100, abs=2 * step)
    assert rows["late"]["relative_to_random"] > 1 and not rows["late"]["goal_met"]
    assert rows["oracle"]["relative_to_random"] < 1
    assert rows["oracle"]["goal_met"] == (rows["oracle"]["relative_to_random"] <= 0.30)
    lo, hi = rows["late"]["relative_interval_95"]
    assert lo <= rows["late"]["relative_to_random"] <= hi


def test_synetune_moasha_peer_runs_on_the_same_table():
    pytest.importorskip("syne_tune")
    from bench.search_efficiency.peers import peer_run

    space = make_space([0.25, 0.5, 1.0])
    table = curve_table(space)
    theirs = peer_run(space, table, seed=4, n_trials=20, rule="synetune")
    assert json.dumps(theirs) == json.dumps(peer_run(space, table, seed=4, n_trials=20, rule="synetune"))
    ours = peer_run(space, table, seed=4, n_trials=20, rule="ours")
    assert len(theirs) == len(ours) == 20
    # both rules got the same configurations, trial by trial, the baselines first
    assert {t["number"]: t["params"] for t in theirs} == {t["number"]: t["params"] for t in ours}
    assert [t["params"] for t in sorted(ours, key=lambda t: t["number"])][:3] == space.baselines()
    assert all(t["state"] == "COMPLETE" for t in ours if t["number"] < 3)  # our rule never stops a baseline
    for run in (theirs, ours):
        stopped = [t for t in run if t["state"] == "PRUNED"]
        assert stopped
        for t in stopped:  # a stopped trial costs its last rung's train_seconds
            curve = {round(f * 9): s for f, _, s in table.curves[table.index(t["params"])]}
            assert t["train_seconds"] == curve[round(t["pruned_at"] * 9)] and math.isnan(t["accuracy"])


def test_a_scheduler_with_fewer_rungs_reads_only_those():
    space = make_space([1.0])
    table = curve_table(space)
    late = {"name": "moasha", "min_fraction": 1 / 3}
    records, _ = replay(space, table, "random", seed=3, n_trials=20, concurrency=2, scheduler=late)
    pruned = [r for r in records if r.state == "PRUNED" and r.duplicate_of is None]  # not the repeats
    assert pruned and all(r.pruned_at == pytest.approx(1 / 3) for r in pruned)
    assert space.scheduler.min_fraction == pytest.approx(1 / 9)  # the space itself is left as it was


def test_a_search_cut_at_a_compute_budget_keeps_the_trial_that_reached_it():
    from bench.search_efficiency.analysis import cut_at_compute

    trials = [{"train_seconds": s} for s in (1.0, 2.0, math.nan, 3.0, 4.0)]  # NaN: failed, no compute known
    assert cut_at_compute(trials, 3.0) == trials[:2]  # 1 + 2 reaches 3
    assert cut_at_compute(trials, 3.5) == trials[:4]  # the third trial adds nothing, the fourth crosses
    assert cut_at_compute(trials, 100.0) == trials  # never reached: the whole search
