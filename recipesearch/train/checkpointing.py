"""The trainer's checkpoints: when one is due, writing it with the clock paused, and going on from one.

With ``every`` seconds and a ``folder``, the trainer writes ``folder/trainer.pt`` between two steps once that
much wall time (host clock: what a crash would lose) has passed since the segment's start or the last
checkpoint, then calls ``on_checkpoint(path, info)`` (``info``: step, train_seconds so far, checkpoints). The
training clock is paused meanwhile: the cost goes to ``TrainResult.checkpoint_seconds``, not ``train_seconds``.
No checkpoint after the last step. A run that cannot be saved (a compiled model, a full disk) trains on without
checkpoints and says so in its warnings.

Going on (``Trainer(resume_from=...)``, a checkpoint file or folder of the same recipe): the trainer restores
that state and goes on from its step, mid-epoch included, without FIT_START again; ``train_seconds`` is then the
checkpoint's seconds plus this segment's (the work done after the checkpoint and lost with the crash is in
neither). ``Checkpoints`` carries the counters across segments. A checkpoint that cannot be restored (another
recipe, unreadable) is not used: the run starts from step 0 with a warning.

Data-parallel runs (``distributed_checkpoint.py``): rank 0's ``every``, ``folder`` and ``resume_from`` count (the
other ranks' are ignored); rank 0's clock decides when, every rank pauses at that step and captures its own
state, and rank 0 writes them as one file; ``on_checkpoint`` is called on every rank, with ``path`` None on the
others. A checkpoint of another number of ranks is not restored.

What the file holds, and its writing and reading: ``checkpoint.py``.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recipesearch.train import checkpoint, distributed_checkpoint

if TYPE_CHECKING:
    import torch

    from recipesearch.algorithms import Algorithm
    from recipesearch.hooks import State
    from recipesearch.train.timing import DeviceClock, LossCheck

OnCheckpoint = Callable[[Path | None, dict[str, Any]], None]


class Checkpoints:
    """One trainer's checkpoint pacing and the counters its run carries across segments.

    ``warnings`` is the trainer's list: a checkpoint not restored or not written is noted there. ``rank``,
    ``world`` and ``group`` (``distributed.host_group``) are the trainer's data-parallel place."""

    def __init__(self, every: float | None, folder: str | Path | None, on_checkpoint: OnCheckpoint | None,
                 warnings: list[str], rank: int = 0, world: int = 1, group: Any = None):
        self.every = every if folder is not None else None  # seconds between two; None: never (again)
        self.folder = Path(folder) if folder is not None else None
        self.on_checkpoint = on_checkpoint
        self.warnings = warnings
        self.rank, self.world, self.group = rank, world, group
        self.seconds = 0.0  # writing checkpoints (and handing them on), every segment's
        self.written = 0  # checkpoints written, every segment's
        self.resumes, self.resume_gap_seconds, self.resumed_at_step = 0, 0.0, 0
        self.prior_seconds = self.prior_data_seconds = 0.0  # the earlier segments' train and data-wait seconds
        self.position: dict[str, Any] | None = None  # the loader's place in the epoch the checkpoint was taken in
        self._last = 0.0  # host clock of the segment's start or the last checkpoint
        self._asked = (0, 0.0, 1)  # data-parallel: (step, time) of the last ask of rank 0, the step to ask next

    def open(self, path: Path | None, recipe_id: str, device: torch.device) -> dict[str, Any] | None:
        """This rank's snapshot of the checkpoint at ``path`` to go on from, or None (no path; not restorable:
        warned). Data-parallel: a collective on every rank (``path`` is rank 0's), which also gives every rank
        rank 0's checkpoint interval; a peer's snapshot then lacks its weights
        (``distributed_checkpoint.share_weights``)."""
        if self.world > 1:
            self.every, snapshot, refused = distributed_checkpoint.begin(path, self.every, recipe_id, device,
                                                                         self.rank, self.world, self.group)
        else:
            snapshot, refused = None, None
            if path is not None:
                try:
                    snapshot = checkpoint.read(path, recipe_id, device)
                except checkpoint.CheckpointError as exc:
                    refused = str(exc)
        if refused is not None:
            self.warnings.append(f"not resumed, trained from step 0: {refused}")
        return snapshot

    def went_on_from(self, snapshot: dict[str, Any]) -> None:
        """The counters a resumed run carries on from ``snapshot`` (restored by ``checkpoint.restore``)."""
        self.prior_seconds, self.prior_data_seconds = snapshot["train_seconds"], snapshot["data_seconds"]
        self.seconds = snapshot["checkpoint_seconds"]
        self.written = snapshot.get("checkpoints", 0)
        self.resumes = snapshot["resumes"] + 1
        self.resume_gap_seconds = snapshot["resume_gap_seconds"] + max(0.0, time.time() - snapshot["written_at"])
        self.position = snapshot["loader"]
        self.resumed_at_step = int(snapshot["step"])

    def start(self, step: int) -> None:
        """The segment's training starts at ``step``: the interval counts from here."""
        self._last = time.perf_counter()
        self._asked = (step, self._last, step + 1)

    def due(self, step: int) -> bool:
        """Whether the interval has passed on rank 0's host clock. Data-parallel: every rank asks rank 0 at the
        same steps and gets its answer, with the step to ask next (about every ``ASK_SECONDS``: a host
        collective every step would cost about a millisecond each on gloo), so every rank pauses at one step."""
        now = time.perf_counter()
        due = now - self._last >= self.every  # type: ignore[operator]
        if self.world == 1:
            return due
        last_step, last_time, ask_at = self._asked
        if step < ask_at:
            return False
        gap = distributed_checkpoint.ask_gap((now - last_time) / max(1, step - last_step), self.every)
        due, gap = distributed_checkpoint.decide(due, gap, self.group)
        self._asked = (step, now, step + gap)
        return due

    def write(self, state: State, algorithms: list[Algorithm], recipe_id: str, rung_seconds: float,
              clock: DeviceClock, losses: LossCheck) -> None:
        """Pause the clock, write the checkpoint of the run (``state``, ``algorithms``), tell ``on_checkpoint``;
        a run that cannot be saved stops checkpointing (on every rank alike) and says why in the warnings."""
        train_seconds = self.prior_seconds + clock.pause()
        losses.drain()  # a diverged run fails here rather than saving a checkpoint
        paused = time.perf_counter()
        try:
            problem = checkpoint.unpicklable_reason(state.model)
            snapshot, path = None, None
            if problem is None:
                data_seconds = self.prior_data_seconds + clock.data_seconds_so_far()
                snapshot = checkpoint.capture(state, algorithms, recipe_id, {
                    "train_seconds": train_seconds, "data_seconds": data_seconds, "rung_seconds": rung_seconds,
                    "checkpoint_seconds": self.seconds, "resumes": self.resumes,
                    "resume_gap_seconds": self.resume_gap_seconds, "checkpoints": self.written + 1})
            target = self.folder / checkpoint.FILENAME if self.folder is not None else None
            if self.world > 1:  # every rank's snapshot, one file written by rank 0 (distributed_checkpoint.py)
                path, problem = distributed_checkpoint.save(snapshot, problem, state.model, target, self.rank,
                                                            self.world, self.group)
            elif problem is None:
                try:
                    path = checkpoint.write(snapshot, target)
                except Exception as exc:  # noqa: BLE001 - an unpicklable object, a full disk: train on without
                    problem = f"cannot save a checkpoint ({type(exc).__name__}: {str(exc)[:120]})"
            if problem is not None:
                self.every = None
                self.warnings.append(f"trained without checkpoints: {problem}")
                return
            self.written += 1
            if self.on_checkpoint is not None:
                self.on_checkpoint(path, {"step": state.step, "train_seconds": train_seconds,
                                          "checkpoints": self.written})
        finally:
            self.seconds += time.perf_counter() - paused
            self._last = time.perf_counter()
            clock.resume()
