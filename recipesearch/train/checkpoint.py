"""A training checkpoint: everything a fresh ``Trainer`` of the same recipe needs to go on bit for bit.

This module is the file: what it holds, writing and reading it. When the trainer writes one and how a run
goes on from one is ``checkpointing.py``; this module knows the trainer's pieces (``State``, the algorithms,
its counters), not the trainer.

What it holds (one ``torch.save`` of one dict, so that shared references survive: the optimizer's params
are the model's, EMA/SWA/Lookahead copies and patch whitening's conv point into the same objects):

* the model (after its surgery), the evaluated model (EMA, SWA, flip TTA wrappers), the optimizer, the
  GradScaler, the LR schedule (SWA shadows its ``factor`` with a closure) and ``State.extra``;
* every algorithm object, with whatever it keeps (EMA/SWA copies, Lookahead's slow weights, layer freezing's
  count, ...): their own state is restored without asking each one for a ``state_dict``;
* the step, epoch, samples seen and last loss; the train and data-wait seconds and the checkpointing cost
  so far, how many times the run was resumed and when this checkpoint was written (wall clock);
* the random state: Python, NumPy, torch (CPU and every CUDA device) and the loader's position in the epoch
  under way (its order, the next batch, its generator: ``BatchLoader.position``), so a run resumes mid-epoch;
* the recipe id: a checkpoint of another recipe is never restored;
* data-parallel runs (``train/distributed_checkpoint.py``): ``world`` and every other rank's snapshot (without
  its model weights, which are rank 0's), so each rank restores its own; a checkpoint of another number of
  workers is not restored.

Pickled with cloudpickle (it ships with Ray): closures are kept by value. Lambdas that point back at the
trainer (``State.forward_backward``) are not saved; the fresh trainer has its own. A compiled model
(``torch_compile``) cannot be pickled: such a run trains without checkpoints (``Trainer`` warns).
Written atomically: a temporary file in the same folder, flushed to disk, then renamed over the old one.
"""
from __future__ import annotations

import os
import random
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cloudpickle
import numpy as np
import torch

if TYPE_CHECKING:
    from torch import nn

    from recipesearch.algorithms import Algorithm
    from recipesearch.hooks import State

FILENAME = "trainer.pt"  # the checkpoint inside a checkpoint folder (what Ray Tune persists)
FORMAT = 1  # bumped when the content changes: an older checkpoint is then not restored


class CheckpointError(Exception):
    """A checkpoint that cannot be restored here: another recipe, another format, an unreadable file."""


def unpicklable_reason(model: nn.Module) -> str | None:
    """Why a run training ``model`` cannot be checkpointed, or None."""
    if hasattr(model, "_orig_mod"):  # torch.compile's OptimizedModule
        return "a compiled model (torch_compile) cannot be saved"
    return None


def capture(s: State, algorithms: list[Algorithm], recipe_id: str, counters: dict[str, float]) -> dict[str, Any]:
    """The checkpoint of a run between two steps (its clock paused): its state ``s``, its algorithms and its
    ``counters`` (train, data, rung and checkpoint seconds, resumes, resume gap, checkpoints written)."""
    return {
        "format": FORMAT, "recipe_id": recipe_id,
        "model": s.model, "eval_model": s.eval_model, "optimizer": s.optimizer, "grad_scaler": s.grad_scaler,
        "schedule": s.schedule, "extra": s.extra, "algorithms": algorithms,
        "step": s.step, "epoch": s.epoch, "samples_seen": s.samples_seen,
        "loss": s.loss.detach() if s.loss is not None else None,
        **counters, "written_at": time.time(),
        "rng": rng_state(), "loader": s.train_loader.position(),
    }


def write(snapshot: dict[str, Any], path: Path) -> Path:
    """Save atomically: a reader sees the previous checkpoint or this one, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(snapshot, f, pickle_module=cloudpickle)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read(path: Path, recipe_id: str, device: torch.device, world: int = 1) -> dict[str, Any]:
    """Load a checkpoint of the recipe ``recipe_id`` trained on ``world`` ranks onto ``device``;
    ``CheckpointError`` says why not."""
    path = Path(path)
    if path.is_dir():
        path = path / FILENAME
    try:
        snapshot = torch.load(path, map_location=device, weights_only=False)
    except Exception as exc:  # noqa: BLE001 - a missing, truncated or foreign file: one reason, no traceback
        raise CheckpointError(f"cannot read {path} ({type(exc).__name__}: {exc})") from None
    if not isinstance(snapshot, dict) or snapshot.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a checkpoint of this version (format {FORMAT})")
    if snapshot.get("recipe_id") != recipe_id:
        raise CheckpointError(f"{path} is a checkpoint of recipe {snapshot.get('recipe_id')}, not {recipe_id}")
    if snapshot.get("world", 1) != world:  # each rank's shard, RNG and statistics: no other split of them
        raise CheckpointError(f"{path} is a checkpoint of {snapshot.get('world', 1)} data-parallel workers, "
                              f"this run has {world}")
    return snapshot


def restore(s: State, snapshot: dict[str, Any]) -> None:
    """Put the checkpoint's objects and step counters in the state ``s`` of a trainer built for the same recipe,
    and its random state in the RNGs; the trainer takes its algorithms and time counters itself
    (``checkpointing.py``), then continues from the loader position without firing FIT_START again."""
    s.model, s.eval_model, s.optimizer = snapshot["model"], snapshot["eval_model"], snapshot["optimizer"]
    s.grad_scaler, s.schedule, s.extra = snapshot["grad_scaler"], snapshot["schedule"], snapshot["extra"]
    s.step, s.epoch, s.samples_seen = snapshot["step"], snapshot["epoch"], snapshot["samples_seen"]
    s.loss = snapshot["loss"]
    set_rng_state(snapshot["rng"])


def rng_state() -> dict[str, Any]:
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"].cpu())  # map_location may have moved it; RNG states live on the host
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([t.cpu() for t in state["cuda"]])
