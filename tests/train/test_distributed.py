"""Data-parallel training (train/distributed.py) without Ray: the sharding alone, then 2 gloo ranks started with
torch.multiprocessing (from a forkserver) on loopback, each running the real ``Trainer`` on digits."""
from __future__ import annotations

import math
import os
import socket
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.multiprocessing as mp

from recipesearch.algorithms.base import Algorithm
from recipesearch.data import BatchLoader
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.train import distributed
from recipesearch.train.loop import Trainer, TrialPruned, fit

HOST = "127.0.0.2"


def _loaders(n=100, batch=20, world=2, augment=False, seed=0):
    images = torch.arange(n, dtype=torch.uint8).view(n, 1, 1, 1).expand(n, 1, 4, 4).contiguous()
    labels = torch.arange(n)

    def gen():
        return torch.Generator().manual_seed(seed)

    one = BatchLoader(images, labels, batch, (0.0,), (1.0,), augment=augment, generator=gen())
    shards = [distributed.shard_loader(BatchLoader(images, labels, batch, (0.0,), (1.0,), augment=augment,
                                                   generator=gen()), rank, world, seed) for rank in range(world)]
    return one, shards


# -- the sharding, in one process -------------------------------------------------------------------------------


def test_ranks_split_each_global_batch_of_one_permutation():
    """Rank r's k-th batch is the r-th slice of the one-worker loader's k-th batch: same global batch, same
    steps, every sample once per epoch across the ranks."""
    one, shards = _loaders(n=100, batch=20, world=2)
    assert [len(s) for s in shards] == [len(one)] * 2 == [5, 5]
    for epoch in range(2):  # the shared order generator stays in step with the one-worker loader's
        whole = list(one)
        parts = [list(s) for s in shards]
        for k, (x, y) in enumerate(whole):
            assert [len(p[k][1]) for p in parts] == [10, 10]
            assert torch.equal(torch.cat([p[k][1] for p in parts]), y), (epoch, k)
            assert torch.equal(torch.cat([p[k][0] for p in parts]), x)
        seen = torch.cat([p[k][1] for p in parts for k in range(len(whole))])
        assert sorted(seen.tolist()) == list(range(100))  # 100 = 5 full global batches


def test_ranks_crop_and_flip_with_their_own_generators():
    _, shards = _loaders(augment=True)
    assert shards[0].order_generator.initial_seed() == shards[1].order_generator.initial_seed() == 0
    assert shards[0].generator.initial_seed() != shards[1].generator.initial_seed()
    assert len({distributed.rank_seed(0, r) for r in range(8)} | {0}) == 9


def test_a_batch_that_does_not_divide_names_resources_workers():
    with pytest.raises(ConfigError) as info:
        _loaders(batch=20, world=3)
    assert info.value.field == "resources.workers" and "batch_size 20" in info.value.message
    assert "\n" not in str(info.value)


# -- 2 gloo ranks, spawned ------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _rank_main(rank: int, world: int, port: int, out: str, job: dict) -> None:
    """One rank: open the group, run ``job`` (see ``_JOBS``), save what it found to ``out/<rank>.pt``."""
    torch.set_num_threads(1)
    rv = distributed.Rendezvous(rank, world, HOST, port, timeout_s=60)
    try:
        with distributed.process_group(rv):
            found = _JOBS[job["kind"]](job)
    except Exception as exc:  # noqa: BLE001 - a job's failure is a finding (and spawn would kill the peer)
        found = {"raised": f"{type(exc).__name__}: {exc}"}
    torch.save(found, os.path.join(out, f"{rank}.pt"))


def _recipe(job):
    from tests.conftest import make_recipe

    return make_recipe(job.get("algorithms"), **job.get("overrides", {}))


def _shapes(trainer: Trainer) -> list[tuple[bool, tuple[int, ...]]]:
    """Every training-mode forward of the model from now on: (with gradients, input shape)."""
    shapes: list[tuple[bool, tuple[int, ...]]] = []

    def record(module, args):
        if module.training:  # not evaluation
            shapes.append((torch.is_grad_enabled(), tuple(args[0].shape)))

    trainer.state.model.register_forward_pre_hook(record)
    return shapes


def _train(job):
    trainer = Trainer(_recipe(job))
    shapes = _shapes(trainer)
    draw = torch.rand(1).item()  # the global stream MixUp and the others draw from: per rank
    result = trainer.fit()
    params = torch.cat([p.detach().flatten() for p in trainer.state.model.parameters()])
    return {"result": result.to_dict(), "shapes": shapes, "draw": draw, "params": params,
            "image_size": trainer.data.image_size,
            "frozen": [p.grad is None for p in trainer.state.model.parameters() if not p.requires_grad]}


def _prune(job):
    stops = job["stop_at"]
    trainer = Trainer(_recipe(job), rungs=(0.25, 0.5, 0.75), on_rung=lambda report: report["rung"] < stops)
    try:
        trainer.fit()
    except TrialPruned as stop:
        return {"pruned_at": stop.report["step"], "accuracy": stop.report["accuracy"]}
    return {"pruned_at": None}


def _fail(job):
    trainer = Trainer(_recipe(job))
    if torch.distributed.get_rank() == 1:
        raise RuntimeError("rank 1 gives up")
    start = time.perf_counter()
    try:
        trainer.fit()
    except Exception as exc:  # noqa: BLE001 - the peer's death is what this rank must notice
        return {"error": f"{type(exc).__name__}: {exc}", "seconds": time.perf_counter() - start}
    return {"error": None}


def _slow_peer(job):
    """Rank 1 sleeps ``sleep`` s a step (after its batch is drawn): rank 0's clock must see it."""
    trainer = Trainer(_recipe(job))
    if torch.distributed.get_rank() == 1:
        for event in (Event.AFTER_DATALOADER,):
            trainer._by_event[event].append(_Sleep(job["sleep"]))
    result = trainer.fit()
    return {"train_seconds": result.train_seconds, "steps": result.steps}


class _Sleep(Algorithm):
    name = "sleep"
    description = "a slow worker"
    citation = "-"
    events = frozenset({Event.AFTER_DATALOADER})

    def __init__(self, seconds: float):
        super().__init__()
        self.seconds = seconds

    def apply(self, event, state):
        time.sleep(self.seconds)


class _SkipOnRank1(Algorithm):
    """Asks to skip the optimizer step of step 3, on rank 1 only."""

    name = "skip_on_rank_1"
    description = "skips one step on one rank"
    citation = "-"
    events = frozenset({Event.AFTER_BACKWARD})
    skips_steps = True

    def apply(self, event, state):
        if state.step == 3 and torch.distributed.get_rank() == 1:
            state.skip_step = True


def _skip(job):
    trainer = Trainer(_recipe(job))
    algo = _SkipOnRank1()
    trainer.algorithms.append(algo)
    trainer._by_event[Event.AFTER_BACKWARD].append(algo)
    stepped = []
    trainer.state.optimizer.register_step_post_hook(lambda opt, args, kwargs: stepped.append(trainer.state.step))
    trainer.fit()
    params = torch.cat([p.detach().flatten() for p in trainer.state.model.parameters()])
    return {"stepped": stepped, "params": params, "steps": trainer.state.step}


def _contract(job):
    """Every registered algorithm in the contract test's short run (its model and parameters), on this rank."""
    from recipesearch.algorithms import list_algorithms
    from tests.algorithms.test_contract import contract_recipe
    from tests.conftest import make_recipe

    found = {}
    for name in list_algorithms():
        try:
            trainer = Trainer(contract_recipe(make_recipe, name))
            trainer.fit()
        except Exception as exc:  # noqa: BLE001 - reported per algorithm
            found[name] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        s = trainer.state
        weights = [torch.cat([p.detach().float().flatten() for p in m.parameters()])
                   for m in (s.model, s.eval_model) if m is not None]
        found[name] = {"error": None, "weights": weights, "samples": s.samples_seen}
    return found


def _seeds(job):
    """The ``train`` job once per seed of ``job["seeds"]``, one after another in this group: one spawn of the
    ranks (their start and torch import: seconds each) for all of them."""
    return [_train({**job, "overrides": {**job.get("overrides", {}), "seed": seed}})["result"]
            for seed in job["seeds"]]


def _sequence(job):
    """``job["jobs"]`` one after another in this group, each from its own seeded start (a job's failure is its
    finding, and the next one runs): one spawn of the ranks (their start and torch import: seconds each) for
    checks that need no fresh group of their own. A job that ends the group (``fail``) goes last."""
    found = []
    for each in job["jobs"]:
        try:
            found.append(_JOBS[each["kind"]](each))
        except Exception as exc:  # noqa: BLE001 - as _rank_main records a whole job's
            found.append({"raised": f"{type(exc).__name__}: {exc}"})
    return found


_JOBS = {"train": _train, "prune": _prune, "fail": _fail, "slow_peer": _slow_peer, "contract": _contract,
         "skip": _skip, "seeds": _seeds, "sequence": _sequence}


def run_ranks(job: dict, world: int = 2, timeout: float = 120) -> list[dict]:
    """``job`` on ``world`` spawned gloo ranks; what each rank found (a dead rank's is missing)."""
    return spawn_ranks(_rank_main, job, world, timeout)


# The modules every rank imports, loaded once per test process by its forkserver (below).
RANK_MODULES = ["torch", "torch._dynamo", "recipesearch.train.loop", "recipesearch.train.distributed"]


def spawn_ranks(rank_main: Any, job: dict, world: int, timeout: float) -> list[dict]:
    """``rank_main(rank, world, port, out, job)`` on ``world`` new processes, each saving what it found as
    ``out/<rank>.pt``; those, in rank order (a dead rank's is ``{}``).

    The processes are forked from multiprocessing's forkserver, a fresh interpreter (no threads: forking it is
    safe, where forking this test process, with Ray's and torch's threads, is not) that imported torch, the
    trainer and ``rank_main``'s module once for this test process: spawned, each rank spent ~5 s of CPU on
    those imports, in every spawn of the ranks."""
    mp.set_forkserver_preload([*RANK_MODULES, rank_main.__module__])  # before the forkserver's first start
    with tempfile.TemporaryDirectory() as out:
        ctx = mp.start_processes(rank_main, args=(world, free_port(), out, job), nprocs=world, join=False,
                                 start_method="forkserver")
        deadline = time.monotonic() + timeout
        try:
            while not ctx.join(timeout=max(0.1, deadline - time.monotonic())):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"ranks still running after {timeout:g} s: a collective hangs")
        finally:
            for p in ctx.processes:
                if p.is_alive():
                    p.kill()
        return [torch.load(Path(out) / f"{r}.pt", weights_only=False) if (Path(out) / f"{r}.pt").exists() else {}
                for r in range(world)]


BATCH_TOUCHING = {
    "mixup": {"alpha": 0.4},
    "progressive_resizing": {"initial_scale": 0.5, "finetune_fraction": 0.2},
    "selective_backprop": {"start": 0.2, "end": 0.8, "keep": 0.5},
}


# One spawn of 2 ranks runs every check below that needs no fresh group (a spawn costs seconds of process start
# and torch import per rank); the rank that dies goes last, since it ends the group.
MECHANICS = {
    "batch": {"kind": "train", "algorithms": BATCH_TOUCHING, "overrides": {"max_duration": 1, "batch_size": 32}},
    "skip": {"kind": "skip", "overrides": {"max_duration": 0.25}},
    "frozen": {"kind": "train", "overrides": {"model": {"name": "resnet8", "width": 8}, "max_duration": 0.5},
               "algorithms": {"layer_freezing": {"freeze_start": 0.3, "freeze_level": 0.5},
                              "stochastic_depth": {"drop_rate": 0.5}}},
    "slow_peer": {"kind": "slow_peer", "sleep": 0.05, "overrides": {"max_duration": 0.5}},
    "prune": {"kind": "prune", "stop_at": 0.5, "overrides": {"max_duration": 1}},
    "fail": {"kind": "fail", "overrides": {"max_duration": 1}},
}


@pytest.mark.system
@pytest.mark.timeout(900)  # ~1 min; several checks in one run, on a busy machine
def test_two_ranks_in_one_group_stay_in_step_skip_prune_wait_and_fail_together():
    """The 2-rank mechanics, one job after another in one group (each check was a test of its own, with its
    own spawn; every assertion is kept):

    - the global batch: MixUp, progressive resizing and selective backprop on 2 ranks: each trains half of
      every global batch (half of the kept half while selective backprop selects; both ranks at the same
      resized shape), the samples add up to a one-worker run's, the weights end equal on both ranks, and the
      ranks draw different random numbers;
    - a step one rank skips is skipped by all: ``skip_step`` set on rank 1 only (by an algorithm that
      declares ``skips_steps``): both ranks skip it;
    - parameters without gradients do not desync the ranks: layer freezing (parameters stop getting
      gradients) and stochastic depth (blocks dropped per rank);
    - rank 0's clock is the trial's training wall time: every step's all-reduce waits for the slowest rank, so
      rank 0's train_seconds covers a slow peer's time: 22 steps with rank 1 sleeping 50 ms each take rank 0
      at least 1.1 s;
    - a rung stop stops every rank at the same step;
    - a rank that dies fails its peer quickly: a rank raising closes the group; the other fails at its next
      collective, well before the timeout."""
    names = list(MECHANICS)
    found = run_ranks({"kind": "sequence", "jobs": list(MECHANICS.values())}, timeout=600)
    assert all(len(r) == len(names) for r in found), found
    got = {name: [r[i] for r in found] for i, name in enumerate(names)}

    ranks, job = got["batch"], MECHANICS["batch"]
    alone = fit(_recipe(job))
    for r in ranks:
        assert r["result"]["samples_seen"] == alone.samples_seen and r["result"]["steps"] == alone.steps
        assert r["result"]["workers"] == 2
    assert torch.equal(ranks[0]["params"], ranks[1]["params"])  # DDP kept them in step
    assert ranks[0]["draw"] != ranks[1]["draw"]
    trained = [[s for grad, s in r["shapes"] if grad] for r in ranks]
    scored = [[s for grad, s in r["shapes"] if not grad] for r in ranks]
    assert trained[0] == trained[1] and len(trained[0]) == alone.steps  # same shapes, step by step
    assert {s[0] for s in trained[0]} == {16, 8}  # 32 / 2 workers; 8 = keep 0.5 of 16 while selecting
    assert {s[0] for s in scored[0]} == {16}  # selective backprop scores the rank's whole shard
    sizes = [s[-1] for s in trained[0]]
    full = ranks[0]["image_size"]
    assert min(sizes) == full // 2 and sizes[-1] == full  # resized early, full size at the end
    assert math.isfinite(ranks[0]["result"]["accuracy"]) and math.isnan(ranks[1]["result"]["accuracy"])
    assert ranks[0]["result"]["accuracy"] > 0.2, (ranks[0]["result"]["accuracy"], alone.accuracy)  # chance: 0.1

    ranks = got["skip"]
    steps = ranks[0]["steps"]
    assert ranks[0]["stepped"] == ranks[1]["stepped"] == [k for k in range(steps) if k != 3]
    assert torch.equal(ranks[0]["params"], ranks[1]["params"])

    ranks = got["frozen"]
    assert torch.equal(ranks[0]["params"], ranks[1]["params"])
    assert ranks[0]["frozen"] and all(ranks[0]["frozen"])  # frozen: no gradient, so weight decay leaves them

    ranks = got["slow_peer"]
    steps = ranks[0]["steps"]
    assert steps == 22 and ranks[0]["train_seconds"] >= steps * 0.05, ranks  # 1438 // 32 // 2
    assert ranks[1]["train_seconds"] >= steps * 0.05

    ranks = got["prune"]
    assert ranks[0]["pruned_at"] == ranks[1]["pruned_at"] == round(0.5 * 44)  # 1438 // 32 = 44 steps
    assert 0 <= ranks[0]["accuracy"] <= 1 and math.isnan(ranks[1]["accuracy"])

    ranks = got["fail"]
    assert ranks[1] == {"raised": "RuntimeError: rank 1 gives up"}
    assert ranks[0]["error"] is not None and ranks[0]["seconds"] < 30, ranks[0]
    assert distributed.peer_gone(ranks[0]["error"]), ranks[0]["error"]


@pytest.mark.system
@pytest.mark.timeout(900)  # ~1 min; several checks in one run, on a busy machine
def test_every_algorithm_keeps_the_ranks_in_step_and_two_are_as_accurate_as_one():
    """One spawn of 2 ranks for both (each was a test with a spawn of its own):

    - every algorithm keeps the ranks in step: the contract run of every registered algorithm on 2 ranks
      trains without error and both ranks end with the same parameters (and averaged copy: EMA, SWA).
      BatchNorm's running statistics are not compared: DDP broadcasts rank 0's before each forward, and each
      rank's last forward then updates its own;
    - accuracy within noise of one worker: digits, width-8 CNN, batch 32, 3 epochs, seeds 0-3: the mean test
      accuracy of 2 workers is within 0.02 of one worker's. Measured over seeds 0-7 (2-core CPU): one worker
      0.965 (sd 0.010), two 0.960 (sd 0.007); the difference of two 4-seed means then has an sd of about
      0.006, so 0.02 is more than 3 sd."""
    overrides = {"max_duration": 3, "batch_size": 32}
    jobs = [{"kind": "contract"}, {"kind": "seeds", "seeds": list(range(4)), "overrides": overrides}]
    found = run_ranks({"kind": "sequence", "jobs": jobs}, timeout=600)
    contract = [r[0] for r in found]
    assert set(contract[0]) == set(contract[1]) and len(contract[0]) >= 25
    for name, mine in contract[0].items():
        other = contract[1][name]
        assert mine["error"] is None and other["error"] is None, (name, mine["error"], other["error"])
        assert all(torch.equal(a, b) for a, b in zip(mine["weights"], other["weights"], strict=True)), name
        assert mine["samples"] == other["samples"], name

    one = [fit(_recipe({"overrides": {**overrides, "seed": seed}})).accuracy for seed in range(4)]
    two = [r["accuracy"] for r in found[0][1]]
    assert abs(statistics.mean(one) - statistics.mean(two)) <= 0.02, (one, two)
    assert min(two) > 0.9, two
