"""One trial: train one recipe and return its result, or the reason it failed, wherever it runs.

The driver (``runner``) turns the sampled params into a validated recipe before the trial starts, so a
trial receives a plain recipe dict and never needs the search space. The config is::

    {"number": 7, "recipe": {...} | None, "error": None | "why the params make no recipe", "threads": 1,
     "rungs": [0.111, 0.333], "rung_split": "val"}      # rungs only where the scheduler prunes

At each rung the trial reports ``{"rung", "rung_accuracy", "train_seconds", ...}`` (its clock paused:
``Trainer``) through the caller's ``on_rung``: on Ray Tune ``tune.report`` (``engine/trainable.py``), whose
scheduler answers before the call returns and, when it stops the trial, ends the training thread inside that
call; in-process the proposal's ``on_rung``, whose False ends the run with ``TrialPruned``, reported as
``{"pruned": True, ...the rung's values}``.

A trial never raises: divergence, out-of-memory and any other exception are reported as
``{"error": "...", ...}`` and the runner records the trial FAIL with that text. Only a dead worker
process (killed, segfault) reaches Tune as an error.

This module has no Ray import: the in-process executor runs ``run_recipe`` directly; the Ray Tune trainable
(``engine/trainable.py``) and a multi-worker trial's ranks (``engine/ranks.py``) run it on Ray's workers.
"""
from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from recipesearch.engine import faults
from recipesearch.engine.checkpoints import working_folder
from recipesearch.engine.shipping import install as install_user_code
from recipesearch.env_info import hardware_class
from recipesearch.errors import DivergenceError, UserError, one_line
from recipesearch.machine_load import GpuWatch, load_1m
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


def start_trial(config: dict[str, Any]) -> dict[str, Any]:
    """A trial process's first step: install the search's user code (``engine/shipping.py``), whose modules may
    bring a test's fault hooks, then pass the ``"start"`` fault point (``engine/faults.py``); the config to go on
    with. User code that does not install makes the config's ``error``, the trial's result (``_run``)."""
    try:
        install_user_code(config.get("plugins"))
    except Exception as exc:  # noqa: BLE001 - the user's code: any failure is the trial's result
        return {**config, "error": describe_error(exc)}
    return faults.reach("start", config)


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
            checkpoint_dir = stack.enter_context(working_folder())
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
            go_on = on_rung(faults.reach("report", rung_report(report), number=config.get("number")))
            faults.reach("rung", config, rung=report["rung"], step=report["step"])
            return go_on

        trainer_rungs = {"rungs": rungs, "rung_split": config.get("rung_split", "val"), "on_rung": report_rung}
    load = {"load_start": load_1m()}  # how busy the machine was (machine_load.py): trials.csv's columns
    watch: GpuWatch | None = None
    try:
        install_user_code(config.get("plugins"))  # the user's modules and registered entries (engine/shipping.py)
        recipe = recipe_from_dict(config["recipe"], source=f"trial {config.get('number')}")
        if str(recipe.device).startswith("cuda") and torch.cuda.is_available():
            watch = GpuWatch(torch.cuda.current_device()).start()
        with _process_group(config.get("rendezvous")):  # a rank of a multi-worker trial (engine/ranks.py)
            result = fit(recipe, **trainer_rungs, **(checkpoints or {}))
    except TrialPruned as stop:
        return {**rung_report(stop.report), "pruned": True, "threads": torch.get_num_threads()}
    except Exception as exc:  # noqa: BLE001 - every failure is a result here, the search goes on
        return _failure(describe_error(exc))
    finally:
        load["load_end"] = load_1m()
        if watch is not None:
            load["gpu_shared"] = watch.stop()
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
            "threads": result.threads, "warnings": "; ".join(result.warnings), **load,
            "cpu_share": result.cpu_share}


def _process_group(rendezvous: dict[str, Any] | None) -> contextlib.AbstractContextManager:
    """The torch process group of a multi-worker trial's rank (``train/distributed.py``); nothing else."""
    if not rendezvous:
        return contextlib.nullcontext()
    from recipesearch.train.distributed import Rendezvous, process_group

    return process_group(Rendezvous(**rendezvous))
