"""bench/replay.py: a recorded search replayed with the same sampler seed reproduces its trials exactly.

No training and no Ray: the "recorded search" runs the search loop over a synthetic objective (a fixed
pseudo-random function of the params), is written to CSV in the trials.csv layout, read back as a table,
and replayed.
"""
from __future__ import annotations

import hashlib
import math
from typing import Any

import pytest

from bench.replay import enumerate_space, grid_space, replay, run_study, with_sampler, write_table
from bench.replay_hypervolume import hv_curves, oracle_search
from bench.replay_table import Table, TableObjective
from recipesearch.analysis.hypervolume_reach import first_reach

BASE = {
    "model": {"name": "cnn", "width": 8}, "data": {"name": "digits"},
    "optimizer": {"name": "sgd", "lr": 0.1}, "max_duration": 4, "batch_size": 32, "seed": 0, "threads": 1,
    "device": "cpu",
}


@pytest.fixture(scope="module")
def space():
    # mixup and cutmix are a forbidden pair: the define-by-run walk must skip the second switch.
    return grid_space(BASE, budgets=[0.25, 0.5, 1.0, 2.0],
                      algorithms=["label_smoothing", "mixup", "cutmix", "channels_last"],
                      hparams={"optimizer.lr": {"grid": [0.5, 1, 2]}}, trials=20, concurrency=2)


def synthetic(params: dict[str, Any]) -> tuple[tuple[float, float], bool]:
    """A fixed, deterministic, non-trivial outcome per params: no training."""
    from recipesearch.space import params_key

    h = int(hashlib.sha256(params_key(params).encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    budget = float(params["budget"])
    n_on = sum(bool(v) for k, v in params.items() if k.startswith("alg."))
    accuracy = 0.5 + 0.4 * (1 - math.exp(-2 * budget)) + 0.05 * h
    seconds = 10 * budget * (1 + 0.2 * n_on) * (0.9 + 0.2 * h)
    return (accuracy, seconds), True


def _outcomes(records):
    return [(r.number, r.params, r.state, r.accuracy, r.train_seconds) for r in records]


@pytest.mark.parametrize("sampler", ["random", "tpe", "nsga2", "gp", "sweep"])
def test_replay_reproduces_recorded_search(space, sampler, tmp_path):
    n = 12 if sampler == "gp" else 16  # GP fits a model per ask (~1 s); its first 10 trials are random anyway
    recorded = run_study(with_sampler(space, sampler, seed=7), synthetic, n_trials=n, concurrency=2)
    assert len(recorded) == n and all(r.state == "COMPLETE" or r.duplicate_of is not None for r in recorded)
    assert [r.params for r in recorded[:4]] == space.baselines()  # the baseline curve comes first
    path = tmp_path / "trials.csv"
    write_table(recorded, path)
    table = Table.read_csv(path, space)

    replayed, hit_rate = replay(space, table, sampler, seed=7, n_trials=n, concurrency=2)

    assert hit_rate == 1.0
    assert _outcomes(replayed) == _outcomes(recorded)


def test_other_seed_gives_another_search(space, tmp_path):
    recorded = run_study(with_sampler(space, "random", seed=1), synthetic, n_trials=16)
    other = run_study(with_sampler(space, "random", seed=2), synthetic, n_trials=16)
    assert [r.params for r in recorded[4:]] != [r.params for r in other[4:]]


def test_full_grid_table_answers_every_proposal(space):
    grid = enumerate_space(space)
    # 4 budgets x 3 LRs x label_smoothing(2) x {none, mixup, cutmix} x channels_last(2)
    assert len(grid) == 4 * 3 * 2 * 3 * 2
    assert not any(p.get("alg.mixup") and p.get("alg.cutmix") for p in grid)
    table = Table((p, *synthetic(p)[0]) for p in grid)
    records, hit_rate = replay(space, table, "tpe", seed=0, n_trials=20, concurrency=2)
    assert hit_rate == 1.0 and all(r.state == "COMPLETE" or r.duplicate_of is not None for r in records)
    for r in records:
        if r.state == "COMPLETE":
            assert (r.accuracy, r.train_seconds) == synthetic(r.params)[0]


def test_missing_point_fails_or_takes_the_nearest(space):
    grid = enumerate_space(space)
    target = next(p for p in grid if p["budget"] == 1.0 and p["optimizer.lr"] == 2 and p.get("alg.mixup"))
    rest = [p for p in grid if p is not target]
    table = Table((p, *synthetic(p)[0]) for p in rest)
    outcome, hit, _ = TableObjective(table, space, miss="fail")(target)
    assert outcome is None and not hit
    outcome, hit, _ = TableObjective(table, space, miss="nearest")(target)
    assert not hit and outcome in table.outcomes


def test_hypervolume_curve_and_time_to_reach(space):
    records = run_study(with_sampler(space, "random", seed=0), synthetic, n_trials=12)
    (secs, hv), = hv_curves([records], reference=[0.0, 100.0])
    assert (hv[1:] >= hv[:-1]).all() and (secs[1:] >= secs[:-1]).all()
    assert first_reach(secs, hv, hv[-1]) <= secs[-1]
    assert first_reach(secs, hv, hv[-1] * 2) == math.inf


# -- the oracle bound: the cheapest search that reaches a hypervolume, knowing the table -----------------


def _brute_force_min(points: Any, required: list[int], target: float, reference: Any) -> float:
    """Every subset of every row (dominated ones too): the definition the oracle must equal."""
    import itertools

    import numpy as np

    from recipesearch.analysis import hypervolume

    rest = [i for i in range(len(points)) if i not in required]
    best = math.inf
    for size in range(len(rest) + 1):
        for rows in itertools.combinations(rest, size):
            idx = required + list(rows)
            if hypervolume(np.asarray(points)[idx], ["maximize", "minimize"], reference) >= target * (1 - 1e-12):
                best = min(best, float(np.asarray(points)[idx, 1].sum()))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_the_oracle_search_is_the_cheapest_subset_reaching_the_target(seed):
    import numpy as np

    from recipesearch.analysis import hypervolume

    rng = np.random.default_rng(seed)
    pts = np.column_stack([rng.uniform(0.5, 1.0, 9), rng.uniform(0.2, 3.0, 9)])
    reference = np.array([0.4, 3.5])
    required = [0, 1]
    full = hypervolume(pts, ["maximize", "minimize"], reference)
    for share in (0.7, 0.9, 1.0):
        found = oracle_search(pts, required, share * full, reference)
        assert found is not None and found.exact
        assert found.seconds == pytest.approx(_brute_force_min(pts, required, share * full, reference))
        assert found.required_seconds == pytest.approx(pts[required, 1].sum())
        assert not set(found.rows) & set(required)
        chosen = hypervolume(pts[required + list(found.rows)], ["maximize", "minimize"], reference)
        assert chosen >= share * full * (1 - 1e-9)


def test_the_oracle_needs_only_front_rows_and_says_when_the_table_falls_short():
    import numpy as np

    # base, A, B (dominated by A: slower and less accurate), C
    pts = np.array([[0.6, 1.0], [0.9, 2.0], [0.85, 2.5], [0.95, 3.0]])
    reference = np.array([0.5, 4.0])
    from recipesearch.analysis import hypervolume

    with_a = hypervolume(pts[[0, 1]], ["maximize", "minimize"], reference)
    found = oracle_search(pts, [0], with_a, reference)
    assert found.rows == (1,) and found.seconds == pytest.approx(3.0)
    assert oracle_search(pts, [0], 2 * hypervolume(pts, ["maximize", "minimize"], reference), reference) is None


def test_a_front_too_large_to_enumerate_gets_a_greedy_upper_bound(monkeypatch):
    import numpy as np

    import bench.replay_hypervolume as replay_module
    from recipesearch.analysis import hypervolume

    rng = np.random.default_rng(3)
    pts = np.column_stack([rng.uniform(0.5, 1.0, 8), rng.uniform(0.2, 3.0, 8)])
    reference = np.array([0.4, 3.5])
    target = 0.95 * hypervolume(pts, ["maximize", "minimize"], reference)
    exact = oracle_search(pts, [0], target, reference)
    monkeypatch.setattr(replay_module, "ORACLE_EXACT_MAX", 0)
    greedy = oracle_search(pts, [0], target, reference)
    assert not greedy.exact and greedy.seconds >= exact.seconds - 1e-12
    assert hypervolume(pts[[0, *greedy.rows]], ["maximize", "minimize"], reference) >= target * (1 - 1e-9)
