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

Per-trial overhead: Tune reuses the actor between trials (``reuse_actors=True``), and this module's
imports (torch, the trainer) plus ``load_data``'s per-process cache mean only the first trial on an
actor pays for importing and decoding the dataset.
"""
from __future__ import annotations

import math
import os
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch

from recipesearch.env_info import hardware_class
from recipesearch.errors import DivergenceError
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
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {text}{where}"


def run_recipe(config: dict[str, Any], on_rung: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any]:
    """Train the trial's recipe; return the metrics to report (or a failure record, or a pruned one).

    ``wall_seconds`` (the whole call: validation, data, model, training, evaluation) next to
    ``train_seconds`` shows the per-trial overhead. ``on_rung`` gets each rung's report (module docstring).
    """
    start = time.perf_counter()
    out = _run(config, on_rung)
    out["wall_seconds"] = time.perf_counter() - start
    return out


def rung_report(report: dict[str, Any]) -> dict[str, Any]:
    """What a trial reports at a rung (``Trainer``'s report, named for the search)."""
    return {**{m: math.nan for m in METRICS}, "rung": report["rung"], "rung_accuracy": report["accuracy"],
            "train_seconds": report["train_seconds"], "rung_eval_seconds": report["rung_eval_seconds"],
            "step": report["step"], "error": None,
            **({"rung_seconds": report["rung_seconds"]} if "rung_seconds" in report else {})}


def _run(config: dict[str, Any], on_rung: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any]:
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
        recipe = recipe_from_dict(config["recipe"], source=f"trial {config.get('number')}")
        result = fit(recipe, **trainer_rungs)
    except TrialPruned as stop:
        return {**rung_report(stop.report), "pruned": True, "threads": torch.get_num_threads()}
    except Exception as exc:  # noqa: BLE001 - every failure is a result here, the search goes on
        return _failure(describe_error(exc))
    finally:
        if torch.cuda.is_available():
            torch.cuda.empty_cache()  # a failed or finished trial must not keep memory from the next
    metrics = {m: getattr(result, m) for m in METRICS}
    metrics["val_accuracy"] = math.nan if result.val_accuracy is None else result.val_accuracy
    if not (math.isfinite(result.accuracy) and math.isfinite(result.train_seconds)):
        return {**metrics, "error": f"non-finite result: accuracy {result.accuracy}, "
                                    f"train_seconds {result.train_seconds}"}
    return {**metrics, "error": None, "steps": result.steps, "device": result.device,
            "rung_seconds": result.rung_seconds,
            "hardware": hardware_class(str(result.device)),
            "threads": result.threads, "warnings": "; ".join(result.warnings)}


# Fault injection for the reliability tests (a worker killed by the kernel, or by Ray's memory monitor):
# ``{"trial": 3, "fault": "sigkill" | "allocate", "gib": 4, "once": "/tmp/marker"}`` as JSON. With ``once``
# the fault strikes the first attempt only (the marker file remembers it across worker processes).
FAULT_ENV = "RECIPESEARCH_TEST_FAULT"


def _inject_fault(config: dict[str, Any]) -> None:
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    import json
    import signal

    fault = json.loads(spec)
    if int(fault.get("trial", -1)) != int(config.get("number", -2)):
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

    result = run_recipe(config, on_rung=report_rung)
    result["node"] = ray.util.get_node_ip_address()  # where it ran: a cluster's nodes may differ in speed
    result["gpu_ids"] = gpu_ids  # Ray's assignment (fractional trials share an id)
    if assigned is not None:
        result["assigned_device"] = assigned
    tune.report(result)
