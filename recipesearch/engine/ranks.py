"""Multi-worker trials on Ray (``resources: {workers: N, gpus_per_worker: 1}``): the Tune trial is rank 0 of
its trial's data-parallel group and starts ranks 1..N-1 as Ray tasks in the other bundles of its placement
group; every rank runs the same ``run_recipe`` inside a torch process group (``train/distributed.py``).

    Tune reserves N bundles of {CPU: cpus, GPU: gpus} at once      tune_resources (placement group, PACK)
    the trial (bundle 0) picks a port on its node                  rank 0 = the TCP store of the group
    ranks 1..N-1: tasks pinned to bundles 1..N-1                   each trains on the GPU Ray gave it
    rank 0 trains in the trial: rungs, errors, report as usual     its train_seconds and accuracy are the trial's
    the peers' results are collected; a failure is one line        the root cause, not "peer closed"

Why the trial launches torch.distributed itself rather than running Ray Train's ``TorchTrainer`` inside it:
1) rank 0 *is* the Tune trial, so rung reports reach Tune's scheduler synchronously, as one-worker trials'
   do: a MO-ASHA STOP ends the training inside ``tune.report`` and the stop is broadcast to the peers at that
   same step. Under Train V2 a worker's report reaches Tune through a queue (``TuneReportCallback``) while
   the workers train on, so a stop would only end the trial's actor and kill the workers mid-step.
2) Tune's placement group reserves all N bundles together, so concurrent trials never hold the CPUs their
   own workers wait for (a Train driver inside a Tune trial holds the trial's resources while its workers
   queue for theirs: with concurrency that can deadlock).
3) Everything ``trainable.py`` does for a trial (device from Ray's assignment, failures as results, the fault
   points of ``faults.py``, the node) applies to rank 0 unchanged; there is no Train controller actor to start
   per trial.
What Ray Train would add and this does not: restarting a worker group in place (here a peer whose process
died ends the trial's attempt with ``WorkerLost``, which Tune's FailureConfig retries like any trial whose
worker died) and elastic sizes. A peer that dies before the group forms costs rank 0 the group's timeout
(``RECIPESEARCH_DDP_TIMEOUT_S``, default 600 s); once training runs, gloo notices a closed connection at
the next step (NCCL only at the timeout).
Checkpoints (``checkpoint_minutes``): rank 0's clock decides when, every rank captures its own state at that
step and rank 0 writes them as one checkpoint, which the trial hands to Tune as a one-worker trial does; a
retried trial (``tune.get_checkpoint``) or a re-run (``resume_from``) gives it to rank 0, which sends each
peer its part (``train/distributed_checkpoint.py``).
"""
from __future__ import annotations

import math
import os
import socket
from collections.abc import Callable
from typing import Any

import ray
from ray import tune
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from recipesearch.engine import faults
from recipesearch.engine.trial import METRICS, run_recipe, start_trial
from recipesearch.train.distributed import DEFAULT_TIMEOUT_S, Rendezvous, peer_gone

# Seconds a collective may wait for a peer before the trial fails (a hung peer); tests shorten it.
TIMEOUT_ENV = "RECIPESEARCH_DDP_TIMEOUT_S"
# Seconds to wait for the peers' results once rank 0 is done: they skip evaluation, so they finish with it.
PEER_GRACE_S = 60.0
# Config keys for rank 0 only: it decides when to checkpoint, writes the file and reads it back for every rank.
_ONE_RANK_ONLY = ("checkpoint_seconds", "resume_from")


def tune_resources(cpus: float, gpus: float, workers: int) -> Any:
    """What ``tune.with_resources`` gets: a dict for one worker, else one bundle per worker, packed onto as
    few nodes as fit them (a multi-node trial is fine: the ranks meet over TCP)."""
    if workers <= 1:
        return {"cpu": cpus, "gpu": gpus}
    bundle = {"CPU": cpus, **({"GPU": gpus} if gpus else {})}
    return tune.PlacementGroupFactory([bundle] * workers, strategy="PACK")


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _gpu_ids() -> list[Any]:
    return [int(i) if str(i).isdigit() else str(i) for i in ray.get_gpu_ids()]


class WorkerLost(RuntimeError):
    """A peer's process died (killed, out of memory, its node lost): the trial's attempt ends as an error, so
    Tune retries it (``FailureConfig``) as it retries a trial whose own worker died."""


@ray.remote(max_retries=0)
def _peer(config: dict[str, Any]) -> dict[str, Any]:
    """Ranks 1..N-1: the trial's recipe in the group; rungs are answered by rank 0 (``Trainer``)."""
    config = start_trial(config)
    out = run_recipe(config, on_rung=(lambda report: True) if config.get("rungs") else None,
                     on_checkpoint=faults.checkpoint_point(config))  # rank 0 wrote one, with this rank's part
    return {**out, "node": ray.util.get_node_ip_address(), "gpu_ids": _gpu_ids()}


def run_workers(config: dict[str, Any], bundles: list[dict[str, float]],
                on_rung: Callable[[dict[str, Any]], bool] | None = None,
                on_checkpoint: Callable[[Any, dict[str, Any]], None] | None = None,
                checkpoint_dir: str | None = None, resume_from: str | None = None) -> dict[str, Any]:
    """Train the trial's recipe on ``len(bundles)`` ranks, rank 0 here with the trial's rung reporting and
    checkpoints (``on_rung``, ``on_checkpoint``, ``checkpoint_dir``, ``resume_from``: as ``run_recipe``'s).
    Returns rank 0's result with ``workers``, ``worker_nodes`` and every rank's GPU ids, or the failure that
    explains the others."""
    world = len(bundles)
    host = ray.util.get_node_ip_address()
    device = str((config.get("recipe") or {}).get("device", "cpu"))
    backend = "nccl" if device.startswith("cuda") else "gloo"
    timeout = float(os.environ.get(TIMEOUT_ENV) or DEFAULT_TIMEOUT_S)
    port = _free_port(host)
    base = {k: v for k, v in config.items() if k not in _ONE_RANK_ONLY}

    def rank_config(rank: int) -> dict[str, Any]:
        return {**(config if rank == 0 else base),
                "rendezvous": Rendezvous(rank, world, host, port, backend, timeout).to_dict()}

    pg = ray.util.get_current_placement_group()
    peers = [_peer.options(num_cpus=bundle.get("CPU", 0), num_gpus=bundle.get("GPU", 0),
                           scheduling_strategy=PlacementGroupSchedulingStrategy(pg, placement_group_bundle_index=rank))
             .remote(rank_config(rank)) for rank, bundle in enumerate(bundles) if rank > 0]
    try:
        rung = (lambda report: on_rung({**report, "workers": world})) if on_rung is not None else None
        result = run_recipe(rank_config(0), on_rung=rung, on_checkpoint=on_checkpoint,
                            checkpoint_dir=checkpoint_dir, resume_from=resume_from)
    except BaseException:
        # Tune stopped the trial inside a rung report (SystemExit in this thread) or we were interrupted: the
        # peers wait in a collective for an answer that will not come, and hold their bundles. The trial's
        # actor may be reused (reuse_actors), so they are ended here rather than left to the group's timeout.
        _cancel(peers)
        raise
    others = _collect(peers)
    lost = [(rank, o["lost"]) for rank, o in enumerate(others, start=1) if o.get("lost")]
    if lost:
        rank, text = lost[0]
        raise WorkerLost(f"rank {rank} of {world}: its process died ({text})")
    result = _explain_failure(result, others)
    result["workers"] = world
    result["worker_nodes"] = [host, *[o.get("node", "") for o in others]]
    result["worker_gpu_ids"] = [_gpu_ids(), *[o.get("gpu_ids", []) for o in others]]
    return result


def _cancel(peers: list[Any]) -> None:
    for ref in peers:
        try:
            ray.cancel(ref, force=True)
        except Exception:  # noqa: BLE001,S110 - already finished, or its worker already gone
            pass


def _collect(peers: list[Any]) -> list[dict[str, Any]]:
    """Each peer's result; a peer that died or did not finish is a failure record."""
    out = []
    for rank, ref in enumerate(peers, start=1):
        ready, _ = ray.wait([ref], timeout=PEER_GRACE_S)
        if not ready:
            _cancel([ref])
            out.append({"error": f"rank {rank} did not finish within {PEER_GRACE_S:g} s of rank 0"})
            continue
        try:
            out.append(ray.get(ref))  # run_recipe never raises: an exception here is the process's death
        except Exception as exc:  # noqa: BLE001 - a dead peer is a finding, reported in one line
            out.append({"lost": type(exc).__name__})  # WorkerCrashedError, NodeDiedError, OutOfMemoryError ...
    return out


def _explain_failure(result: dict[str, Any], others: list[dict[str, Any]]) -> dict[str, Any]:
    """A failed rank's peers fail too, at their next collective ("connection closed by peer"): the trial's
    error is the first failure that is a rank's own, named with its rank; rank 0's pruning and success stand
    unless a peer failed on its own."""
    errors = [(0, result.get("error"))] + [(rank, o.get("error")) for rank, o in enumerate(others, start=1)]
    errors = [(rank, e) for rank, e in errors if e]
    if not errors:
        return result
    own = [(rank, e) for rank, e in errors if not peer_gone(str(e))]
    rank, error = (own or errors)[0]
    if rank == 0:
        return result
    return {**{m: math.nan for m in METRICS}, "error": f"rank {rank} of {len(others) + 1}: {error}",
            "wall_seconds": result.get("wall_seconds", math.nan)}
