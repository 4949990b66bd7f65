"""The Ray Tune trainable: one trial on a Ray worker, on the device Ray assigned it, reported to Tune.

Rung reports go through ``tune.report``, whose scheduler answers before the call returns (function trainables
report synchronously) and, when it stops the trial, ends the training thread inside that call, so its compute
ends there (``engine/trial.py`` runs the recipe).

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

import os
from pathlib import Path
from typing import Any

import ray
from ray import tune

from recipesearch.engine import faults
from recipesearch.engine.checkpoints import working_folder
from recipesearch.engine.ranks import run_workers
from recipesearch.engine.trial import checkpoint_report, run_recipe, start_trial


def trial_device(recipe_device: str, gpu_ids: list[Any]) -> str:
    """The device a trial trains on: with ``device: auto``, the GPU Ray assigned it (Ray sets
    CUDA_VISIBLE_DEVICES to it, so "cuda" in the worker is that GPU) and the CPU when it was given none.
    An explicit device is kept (``cuda`` without an assigned GPU then fails with a one-line error)."""
    if recipe_device != "auto":
        return recipe_device
    return "cuda" if gpu_ids else "cpu"


def _gpu_ids() -> list[Any]:
    return [int(i) if str(i).isdigit() else str(i) for i in ray.get_gpu_ids()]


def _bundles() -> list[dict[str, float]]:
    """The bundles Tune reserved for this trial, one per worker (``engine/ranks.py``)."""
    pg = ray.util.get_current_placement_group()
    return list(pg.bundle_specs) if pg is not None else []


def trainable(config: dict[str, Any]) -> None:
    """Ray Tune function trainable: one report per trial, on the device Ray assigned it."""
    gpu_ids = _gpu_ids()
    assigned = None
    if isinstance(config.get("recipe"), dict):
        assigned = trial_device(str(config["recipe"].get("device", "auto")), gpu_ids)
        config = {**config, "recipe": {**config["recipe"], "device": assigned}}
    config = start_trial(config)

    def report_rung(report: dict[str, Any]) -> bool:
        # Tune's scheduler decides before this returns; a stop ends this thread inside tune.report
        tune.report(report)
        return True

    reached = faults.checkpoint_point(config)

    def report_checkpoint(path: Path, info: dict[str, Any]) -> None:
        # Tune copies the folder to the trial's storage before this returns: the local file may change next
        tune.report(checkpoint_report(info), checkpoint=tune.Checkpoint.from_directory(str(path.parent)))
        reached()

    with working_folder() as work:
        restored = tune.get_checkpoint()  # Tune's retry of this trial after its worker died: go on from there
        resume = None
        if restored is not None and config.get("checkpoint_seconds"):
            resume = restored.to_directory(os.path.join(work, "restored"))
        bundles = _bundles()
        if len(bundles) > 1:  # resources.workers > 1: this trial is rank 0 of a data-parallel group
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
