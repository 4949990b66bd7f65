"""The Ray Tune trainable: train one recipe and report its result, or the reason it failed.

The driver (``runner``) turns the sampled params into a validated recipe before the trial starts, so a
trial receives a plain recipe dict and never needs the search space. The config is::

    {"number": 7, "recipe": {...} | None, "error": None | "why the params make no recipe", "threads": 1,
     "rungs": [0.111, 0.333], "rung_split": "val"}      # rungs only where the scheduler prunes

At each rung the trial reports ``{"rung", "rung_accuracy", "train_seconds", ...}`` (its clock paused:
``Trainer``): on Ray Tune through ``tune.report``, whose scheduler answers before the call returns
(function trainables report synchronously) and, when it stops the trial, ends the training thread inside
that call, so its compute ends there; in-process through the proposal's ``on_rung``, whose False ends the
run with ``TrialPruned``, reported as ``{"pruned": True, ...the rung's values}``.

A trial never raises: divergence, out-of-memory and any other exception are reported as
``{"error": "...", ...}`` and the runner records the trial FAIL with that text. Only a dead worker
process (killed, segfault) reaches Tune as an error.

The device: a recipe with ``device: auto`` trains on the GPU Ray assigned the trial (``ray.get_gpu_ids()``;
Ray sets CUDA_VISIBLE_DEVICES, so "cuda" is that GPU) and on the CPU when it was given none; the ids are
recorded (``gpu_ids``, ``assigned_device``).

Checkpoints (``config["checkpoint_seconds"]``, from the space's ``checkpoint_minutes``): the trainer writes
one into a local folder every so many seconds (``Trainer``; paused out of train_seconds) and the trial hands
it to Tune with ``tune.report({"checkpoint_step": ...}, checkpoint=Checkpoint.from_directory(folder))``, which
copies it to the trial's folder in Tune's storage before it returns. A trial Tune starts again after its
worker died (``FailureConfig``) finds its latest one with ``tune.get_checkpoint()`` and goes on from it; a
trial the driver queued again (``--resume`` after kill -9, or a lost worker past Tune's retries) gets the
path of its predecessor's latest one as ``config["resume_from"]`` (engine/checkpoints.py). The trainer
restores only a checkpoint of the same recipe; ``train_seconds`` is the sum of the segments.

Multi-worker trials (``resources.workers`` > 1, ``engine/ranks.py``): Tune reserves one placement-group bundle
per worker; this trial is rank 0 and starts the other ranks in its other bundles, every rank runs
``run_recipe`` with ``config["rendezvous"]`` (its torch process group), and rank 0's result, with each rank's
node and GPU ids, is the trial's. Rank 0's checkpoint holds every rank's state (``train/distributed_checkpoint.py``):
it is reported and restored as a one-worker trial's.

Per-trial overhead: Tune reuses the actor between trials (``reuse_actors=True``), and this module's
imports (torch, the trainer) plus ``load_data``'s per-process cache mean only the first trial on an
actor pays for importing and decoding the dataset.
"""
from __future__ import annotations

import contextlib
import math
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from recipesearch.engine.shipping import install as install_user_code
from recipesearch.env_info import hardware_class
from recipesearch.errors import DivergenceError, UserError, one_line
from recipesearch.recipe import recipe_from_dict
from recipesearch.train.loop import TrialPruned, fit

# Every metric a trial reports; NaN when it failed (Tune wants the searcher's metrics in every result).
METRICS = ("accuracy", "val_accuracy", "loss", "train_seconds", "throughput", "data_wait_fraction", "epochs",
           "eval_seconds")


def _failure(error: str) -> dict[str, Any]:
    return {**{m: math.nan for m in METRICS}, "error": error}


def describe_error(exc: BaseException) -> str:
    """One line a user can act on: divergence, out of memory, or the exception and where it came from."""
    if isinstance(exc, DivergenceError):
        return str(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    oom = isinstance(exc, MemoryError) or "out of memory" in text.lower()
    if getattr(torch.cuda, "OutOfMemoryError", None) and isinstance(exc, torch.cuda.OutOfMemoryError):
        oom = True
    if oom:
        return f"out of memory: {text or type(exc).__name__}"
    # a UserError's text already says what and where (a user factory's line included); ours is noise there
    return one_line(exc, where=not isinstance(exc, UserError))


def run_recipe(config: dict[str, Any], on_rung: Callable[[dict[str, Any]], bool] | None = None,
               on_checkpoint: Callable[[Path, dict[str, Any]], None] | None = None,
               checkpoint_dir: str | Path | None = None, resume_from: str | Path | None = None) -> dict[str, Any]:
    """Train the trial's recipe; return the metrics to report (or a failure record, or a pruned one).

    ``wall_seconds`` (the whole call: validation, data, model, training, evaluation) next to
    ``train_seconds`` shows the per-trial overhead. ``on_rung`` gets each rung's report (module docstring).
    With ``config["checkpoint_seconds"]`` the trainer writes ``checkpoint_dir/trainer.pt`` that often (a
    temporary folder when none is given) and calls ``on_checkpoint(path, info)``; ``resume_from`` (else
    ``config["resume_from"]``) is the checkpoint to go on from.
    """
    start = time.perf_counter()
    every = config.get("checkpoint_seconds")
    with contextlib.ExitStack() as stack:
        if every and checkpoint_dir is None:
            checkpoint_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="recipesearch-checkpoint-"))
        checkpoints = {"checkpoint_every": float(every), "checkpoint_dir": checkpoint_dir} if every else {}
        if on_checkpoint is not None:  # a multi-worker trial's peer has no interval of its own: rank 0's counts
            checkpoints["on_checkpoint"] = on_checkpoint
        resume = resume_from or config.get("resume_from")
        out = _run(config, on_rung, {**checkpoints, **({"resume_from": resume} if resume else {})})
    out["wall_seconds"] = time.perf_counter() - start
    return out


def checkpoint_report(info: dict[str, Any]) -> dict[str, Any]:
    """What a trial reports with a checkpoint: no ``rung`` (the scheduler lets it pass), NaN metrics."""
    return {**{m: math.nan for m in METRICS}, "checkpoint_step": info["step"],
            "train_seconds": info["train_seconds"], "error": None}


def rung_report(report: dict[str, Any]) -> dict[str, Any]:
    """What a trial reports at a rung (``Trainer``'s report, named for the search)."""
    return {**{m: math.nan for m in METRICS}, "rung": report["rung"], "rung_accuracy": report["accuracy"],
            "train_seconds": report["train_seconds"], "rung_eval_seconds": report["rung_eval_seconds"],
            "step": report["step"], "error": None,
            **({"rung_seconds": report["rung_seconds"]} if "rung_seconds" in report else {})}


def _run(config: dict[str, Any], on_rung: Callable[[dict[str, Any]], bool] | None = None,
         checkpoints: dict[str, Any] | None = None) -> dict[str, Any]:
    if config.get("error"):
        return _failure(config["error"])
    threads = int(config.get("threads") or 1)
    torch.set_num_threads(threads)  # its CPU share: parallel trials must not distort each other's time
    rungs = tuple(config.get("rungs") or ()) if on_rung is not None else ()
    trainer_rungs: dict[str, Any] = {}
    if rungs:
        def report_rung(report: dict[str, Any]) -> bool:
            go_on = on_rung(rung_report(report))
            _hold_in_rung()
            return go_on

        trainer_rungs = {"rungs": rungs, "rung_split": config.get("rung_split", "val"), "on_rung": report_rung}
    try:
        install_user_code(config.get("plugins"))  # the user's modules and registered entries (engine/shipping.py)
        recipe = recipe_from_dict(config["recipe"], source=f"trial {config.get('number')}")
        with _process_group(config.get("rendezvous")):  # a rank of a multi-worker trial (engine/ranks.py)
            result = fit(recipe, **trainer_rungs, **(checkpoints or {}))
    except TrialPruned as stop:
        return {**rung_report(stop.report), "pruned": True, "threads": torch.get_num_threads()}
    except Exception as exc:  # noqa: BLE001 - every failure is a result here, the search goes on
        return _failure(describe_error(exc))
    finally:
        if torch.cuda.is_available():
            torch.cuda.empty_cache()  # a failed or finished trial must not keep memory from the next
    metrics = {m: getattr(result, m) for m in METRICS}
    metrics["val_accuracy"] = math.nan if result.val_accuracy is None else result.val_accuracy
    evaluated = int((config.get("rendezvous") or {}).get("rank", 0)) == 0  # a multi-worker trial's rank 0 evaluates
    if evaluated and not (math.isfinite(result.accuracy) and math.isfinite(result.train_seconds)):
        return {**metrics, "error": f"non-finite result: accuracy {result.accuracy}, "
                                    f"train_seconds {result.train_seconds}"}
    return {**metrics, "error": None, "steps": result.steps, "device": result.device,
            "rung_seconds": result.rung_seconds, "checkpoint_seconds": result.checkpoint_seconds,
            "checkpoints": result.checkpoints, "resumes": result.resumes,
            "resume_gap_seconds": result.resume_gap_seconds, "resumed_at_step": result.resumed_at_step,
            "hardware": hardware_class(str(result.device)), "workers": result.workers,
            "threads": result.threads, "warnings": "; ".join(result.warnings)}


def _process_group(rendezvous: dict[str, Any] | None) -> contextlib.AbstractContextManager:
    """The torch process group of a multi-worker trial's rank (``train/distributed.py``); nothing else."""
    if not rendezvous:
        return contextlib.nullcontext()
    from recipesearch.train.distributed import Rendezvous, process_group

    return process_group(Rendezvous(**rendezvous))


# Fault injection for the reliability tests (a worker killed by the kernel, or by Ray's memory monitor):
# ``{"trial": 3, "fault": "sigkill" | "allocate", "gib": 4, "once": "/tmp/marker"}`` as JSON. With ``once``
# the fault strikes the first attempt only (the marker file remembers it across worker processes). With
# ``"after_checkpoint": k`` it strikes right after the trial's k-th checkpoint (of this attempt) reached Tune,
# not at the start. With ``"rank": r`` it strikes rank r of a multi-worker trial (engine/ranks.py) only.
FAULT_ENV = "RECIPESEARCH_TEST_FAULT"


def _inject_fault(config: dict[str, Any], checkpoints: int | None = None) -> None:
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    import json
    import signal

    fault = json.loads(spec)
    if int(fault.get("trial", -1)) != int(config.get("number", -2)):
        return
    if int(fault.get("rank", 0)) != int((config.get("rendezvous") or {}).get("rank", 0)):  # multi-worker trials
        return
    if fault.get("after_checkpoint") is not None and checkpoints != int(fault["after_checkpoint"]):
        return
    once = fault.get("once")
    if once:
        if os.path.exists(once):
            return
        open(once, "w").close()
    if fault.get("fault") == "allocate":  # grow until Ray's memory monitor (or the kernel) kills us
        hog = []
        for _ in range(int(fault.get("gib", 4)) * 8):
            hog.append(torch.ones(2**24, dtype=torch.float64))  # 128 MiB, touched
            time.sleep(0.05)
        time.sleep(60)
    os.kill(os.getpid(), signal.SIGKILL)


# Test-only device override, for machines without a GPU whose Ray was given fake ones
# (``ray.init(num_gpus=4)``): with ``fake-cuda`` a trial Ray gave a GPU records the device it would train on
# ("cuda") and Ray's assignment, but trains on the CPU (there is no CUDA to train on).
DEVICE_ENV = "RECIPESEARCH_TEST_DEVICE"
# Test-only hold, so that concurrent trials surely overlap: ``{"dir": DIR, "parties": 8, "timeout": 60}`` as
# JSON; each trial marks DIR/<number> and waits (at most ``timeout`` s) until ``parties`` trials have.
HOLD_ENV = "RECIPESEARCH_TEST_HOLD"


def trial_device(recipe_device: str, gpu_ids: list[Any]) -> str:
    """The device a trial trains on: with ``device: auto``, the GPU Ray assigned it (Ray sets
    CUDA_VISIBLE_DEVICES to it, so "cuda" in the worker is that GPU) and the CPU when it was given none.
    An explicit device is kept (``cuda`` without an assigned GPU then fails with a one-line error)."""
    if recipe_device != "auto":
        return recipe_device
    return "cuda" if gpu_ids else "cpu"


# Test-only pause inside each rung report (after the scheduler's answer), so a test can kill -9 a search
# there: ``{"file": PATH, "sleep": 3}`` as JSON; PATH counts the rung reports so far.
HOLD_RUNG_ENV = "RECIPESEARCH_TEST_HOLD_RUNG"


def _hold_in_rung() -> None:
    spec = os.environ.get(HOLD_RUNG_ENV)
    if not spec:
        return
    import json

    hold = json.loads(spec)
    try:
        count = int(open(hold["file"]).read() or 0)
    except (OSError, ValueError):
        count = 0
    with open(hold["file"], "w") as f:
        f.write(str(count + 1))
    time.sleep(float(hold.get("sleep", 1)))


def _hold(config: dict[str, Any]) -> None:
    spec = os.environ.get(HOLD_ENV)
    if not spec:
        return
    import json

    hold = json.loads(spec)
    folder = hold["dir"]
    os.makedirs(folder, exist_ok=True)
    open(os.path.join(folder, str(config.get("number"))), "w").close()
    deadline = time.monotonic() + float(hold.get("timeout", 60))
    while len(os.listdir(folder)) < int(hold.get("parties", 1)) and time.monotonic() < deadline:
        time.sleep(0.1)


def _gpu_ids() -> list[Any]:
    import ray

    return [int(i) if str(i).isdigit() else str(i) for i in ray.get_gpu_ids()]


def _bundles() -> list[dict[str, float]]:
    """The bundles Tune reserved for this trial, one per worker (``engine/ranks.py``)."""
    import ray

    pg = ray.util.get_current_placement_group()
    return list(pg.bundle_specs) if pg is not None else []


def trainable(config: dict[str, Any]) -> None:
    """Ray Tune function trainable: one report per trial, on the device Ray assigned it."""
    import ray
    from ray import tune

    _inject_fault(config)
    gpu_ids = _gpu_ids()
    assigned = None
    if isinstance(config.get("recipe"), dict):
        assigned = trial_device(str(config["recipe"].get("device", "auto")), gpu_ids)
        trains_on = "cpu" if os.environ.get(DEVICE_ENV) == "fake-cuda" and assigned.startswith("cuda") else assigned
        config = {**config, "recipe": {**config["recipe"], "device": trains_on}}
    _hold(config)

    def report_rung(report: dict[str, Any]) -> bool:
        # Tune's scheduler decides before this returns; a stop ends this thread inside tune.report
        tune.report(report)
        return True

    written = 0

    def report_checkpoint(path: Path, info: dict[str, Any]) -> None:
        nonlocal written
        # Tune copies the folder to the trial's storage before this returns: the local file may change next
        tune.report(checkpoint_report(info), checkpoint=tune.Checkpoint.from_directory(str(path.parent)))
        written += 1
        _inject_fault(config, checkpoints=written)

    with tempfile.TemporaryDirectory(prefix="recipesearch-checkpoint-") as work:
        restored = tune.get_checkpoint()  # Tune's retry of this trial after its worker died: go on from there
        resume = None
        if restored is not None and config.get("checkpoint_seconds"):
            resume = restored.to_directory(os.path.join(work, "restored"))
        bundles = _bundles()
        if len(bundles) > 1:  # resources.workers > 1: this trial is rank 0 of a data-parallel group
            from recipesearch.engine.ranks import run_workers

            result = run_workers(config, bundles, on_rung=report_rung, on_checkpoint=report_checkpoint,
                                 checkpoint_dir=os.path.join(work, "current"), resume_from=resume)
        else:
            result = run_recipe(config, on_rung=report_rung, on_checkpoint=report_checkpoint,
                                checkpoint_dir=os.path.join(work, "current"), resume_from=resume)
    result["node"] = ray.util.get_node_ip_address()  # where it ran: a cluster's nodes may differ in speed
    result["gpu_ids"] = gpu_ids  # Ray's assignment (fractional trials share an id)
    if assigned is not None:
        result["assigned_device"] = assigned
    tune.report(result)
