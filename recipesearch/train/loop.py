"""The training loop: fires events, times the training steps only, evaluates, returns a TrainResult.

Timing (``recipesearch/train/timing.py`` has the details and what is assumed): ``train_seconds`` is the
host wall-clock from FIT_START (its hooks included) to FIT_END, taken after a device sync at both ends,
so on a GPU it covers every kernel queued in between; one-off start-up (decoding, model construction,
surgery) comes before it and evaluation after it (``eval_seconds``). It includes the data wait.
``data_wait_fraction`` = data-wait seconds / train_seconds, where the data wait is the time spent
fetching each batch and running the AFTER_DATALOADER hooks: host ``perf_counter`` on CPU; on CUDA, CUDA
events around the same span, i.e. the GPU time spent on input kernels or idle waiting for the host to
produce the batch (host time in ``next()`` while the GPU still has queued steps to run costs nothing and
is not counted). The timed loop does not synchronise the GPU per step: only at FIT_START and FIT_END, and
once per epoch when an ``on_epoch_end`` callback wants host values. The NaN/inf loss check reads the
loss every step on CPU and, on CUDA, a non-blocking copy every 50 steps and at the last step
(``LossCheck``). On CUDA the loader draws its random numbers (shuffle, crop, flip) from a generator on
the data's device: a CPU generator would copy them to the GPU with a blocking copy, which is a stream
sync, three times a step. Without a GPU to hand, the CUDA path was tested on CPU with counting fakes
(``tests/train/test_timing.py``); its GPU-only test runs a fit under ``set_sync_debug_mode("error")``.
"""
from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from recipesearch.algorithms import Algorithm, build_algorithms
from recipesearch.data import BatchLoader, DataBundle, eval_batches, load_data
from recipesearch.data.source import ImageSource
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State
from recipesearch.models import create_model
from recipesearch.models.registry import TV_PREFIX
from recipesearch.recipe import Recipe
from recipesearch.train import distributed
from recipesearch.train.optim import build_optimizer, set_lr
from recipesearch.train.schedule import LRSchedule
from recipesearch.train.timing import DeviceClock, LossCheck

_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}

# The events of every training step, in the order they fire (hooks/events.py). The loop looks their hook lists up
# once per ``train()`` (``_bind_hooks``) and skips an event that no hook listens to without a call: an Event is a
# StrEnum whose hash runs in Python, and ten dict look-ups and calls per step were a few µs of a tiny model's step.
_STEP_EVENTS = (Event.AFTER_DATALOADER, Event.BATCH_START, Event.BEFORE_FORWARD, Event.AFTER_FORWARD,
                Event.BEFORE_LOSS, Event.AFTER_LOSS, Event.BEFORE_BACKWARD, Event.AFTER_BACKWARD, Event.AFTER_STEP,
                Event.BATCH_END)
(_AFTER_DATALOADER, _BATCH_START, _BEFORE_FORWARD, _AFTER_FORWARD, _BEFORE_LOSS, _AFTER_LOSS, _BEFORE_BACKWARD,
 _AFTER_BACKWARD, _AFTER_STEP, _BATCH_END) = _STEP_EVENTS


@dataclass
class TrainResult:
    accuracy: float  # top-1 on the test split
    loss: float
    train_seconds: float  # training steps only: no evaluation, decoding or model construction
    throughput: float  # training images per second
    data_wait_fraction: float  # share of train_seconds spent producing/augmenting batches (CUDA: GPU idle or on input)
    epochs: float
    steps: int
    samples_seen: int
    recipe_id: str
    val_accuracy: float | None = None
    val_loss: float | None = None
    eval_seconds: float | None = None  # test (+ val) evaluation, outside train_seconds: where TTA's cost shows
    rung_seconds: float = 0.0  # rung evaluations and the scheduler's answers, outside train_seconds
    checkpoint_seconds: float = 0.0  # writing checkpoints (and handing them to Ray Tune), outside train_seconds
    checkpoints: int = 0  # checkpoints written, every segment of the run
    resumes: int = 0  # times the run went on from a checkpoint (segments - 1); train_seconds sums the segments
    # wall time from each restored checkpoint's writing to its resume: the work lost after it, noticing the death
    # and starting again (clocks of two nodes when the run moved: as far apart as they are)
    resume_gap_seconds: float = 0.0
    resumed_at_step: int = 0  # the step of the last checkpoint it went on from (0: trained from the start)
    device: str = "cpu"
    threads: int = 1
    workers: int = 1  # data-parallel ranks (train/distributed.py); train_seconds and accuracy are rank 0's
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("cpu")
    dev = torch.device(name)
    if dev.type == "cuda" and not torch.cuda.is_available():
        from recipesearch.errors import ConfigError

        raise ConfigError("device", "CUDA was asked for but no GPU is visible; allowed here: auto, cpu")
    return dev


def seed_everything(seed: int) -> torch.Generator:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    gen = torch.Generator()
    gen.manual_seed(seed)
    return gen


def soft_cross_entropy(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy for class indices [B] or class distributions [B, K] (MixUp, label smoothing)."""
    return F.cross_entropy(outputs, targets)


@torch.inference_mode()
def evaluate(state: State, images: torch.Tensor | ImageSource, labels: torch.Tensor) -> tuple[float, float]:
    """Top-1 accuracy and mean loss of ``state.eval_model or state.model`` on a split (hard labels); streamed
    images (an ``ImageSource``) are read by the bundle's DataLoader workers."""
    model = state.eval_model or state.model
    was_training = model.training
    model.eval()
    correct, total_loss = 0, 0.0
    for x, y in eval_batches(images, labels, state.recipe.eval_batch_size, state.data.mean, state.data.std,
                             workers=state.data.workers):
        if state.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        with state.autocast():
            out = model(x)
        total_loss += F.cross_entropy(out.float(), y, reduction="sum").item()
        correct += (out.argmax(1) == y).sum().item()
    model.train(was_training)
    n = max(1, len(labels))
    return correct / n, total_loss / n


_NO_STEP_HOOKS: tuple[list[Algorithm], ...] = tuple([] for _ in _STEP_EVENTS)  # SAM's second pass fires nothing


class TrialPruned(Exception):  # noqa: N818 - a decision, not an error
    """A rung's scheduler stopped the run (``Trainer``'s ``on_rung`` returned False); ``report`` is that
    rung's report, the run's last result."""

    def __init__(self, report: dict[str, Any]):
        super().__init__(f"stopped at rung {report.get('rung')}")
        self.report = report


class Trainer:
    """Runs one recipe. ``fit()`` is the whole job; the pieces are methods so tests can drive them.

    ``rungs`` (fractions of the steps) with ``on_rung(report) -> bool``: after each rung's step the clock
    pauses, the model is evaluated on ``rung_split`` (the split the search selects on, never chosen to be
    test by a search), and ``on_rung`` gets ``{"rung", "step", "accuracy", "train_seconds",
    "rung_eval_seconds"}`` (``train_seconds`` so far, the rung's evaluation left out); False stops the run
    with ``TrialPruned``. The report's time (evaluation plus the scheduler's answer) is outside
    ``train_seconds`` and summed into ``TrainResult.rung_seconds``.

    Checkpoints (``recipesearch/train/checkpoint.py``): with ``checkpoint_every`` seconds and a
    ``checkpoint_dir``, the loop writes ``checkpoint_dir/trainer.pt`` between two steps once that much wall
    time (host clock: what a crash would lose) has passed since the segment's start or the last checkpoint,
    then calls ``on_checkpoint(path, info)`` (``info``: step, train_seconds so far). The clock is paused
    meanwhile: the cost goes to ``TrainResult.checkpoint_seconds``, not ``train_seconds``. No checkpoint
    after the last step. ``resume_from`` (a checkpoint file or folder of the same recipe) restores that
    state in this freshly built trainer and the run goes on from its step, mid-epoch included, without
    FIT_START again; ``train_seconds`` is then the checkpoint's seconds plus this segment's (the work done
    after the checkpoint and lost with the crash is in neither). A checkpoint that cannot be restored
    (another recipe, unreadable) is not used: the run starts from step 0 with a warning.
    Data-parallel runs (``train/distributed_checkpoint.py``): rank 0's ``checkpoint_every``, ``checkpoint_dir``
    and ``resume_from`` count (the other ranks' are ignored); rank 0's clock decides when, every rank pauses at
    that step and captures its own state, and rank 0 writes them as one file; ``on_checkpoint`` is called on
    every rank, with ``path`` None on the others. A checkpoint of another number of ranks is not restored.
    """

    def __init__(self, recipe: Recipe, data: DataBundle | None = None,
                 on_epoch_end: Callable[[State, dict[str, float]], None] | None = None,
                 rungs: tuple[float, ...] | list[float] = (),
                 on_rung: Callable[[dict[str, Any]], bool] | None = None, rung_split: str = "val",
                 checkpoint_every: float | None = None, checkpoint_dir: str | Path | None = None,
                 on_checkpoint: Callable[[Path | None, dict[str, Any]], None] | None = None,
                 resume_from: str | Path | None = None):
        self.recipe = recipe
        self.warnings: list[str] = []
        # checkpoints: seconds between two (None: never), where, who is told; counters carried across segments
        self.checkpoint_every = checkpoint_every if checkpoint_dir is not None else None
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
        self.on_checkpoint = on_checkpoint
        self.checkpoint_seconds, self.checkpoints, self.resumes, self.resume_gap_seconds = 0.0, 0, 0, 0.0
        self.resumed_at_step = 0
        self._prior_seconds = self._prior_data_seconds = 0.0  # the earlier segments' (resume_from)
        self._resume_position: dict[str, Any] | None = None  # the loader's place in the epoch under way
        self.on_epoch_end = on_epoch_end
        self.rungs, self.on_rung, self.rung_split = tuple(rungs), on_rung, rung_split
        self.rung_seconds = 0.0
        if recipe.threads:
            torch.set_num_threads(recipe.threads)
        self.device = resolve_device(recipe.device)
        self._device_type = self.device.type
        self.generator = seed_everything(recipe.seed)
        # One-off start-up, outside the timed region: decoding, model construction, model surgery.
        self.data = data if data is not None else load_data(recipe.data, self.device)
        if self.data.streamed and recipe.data.in_memory in (None, "auto"):  # auto chose: say so, it costs speed
            self.warnings.append(f"data.in_memory auto: {self.data.name}'s decoded images would not fit in memory, "
                                 f"so they are streamed from disk by {self.data.workers} DataLoader worker(s)")
        self.clock = DeviceClock.for_device(self.device)  # tests swap in a counting fake of the CUDA clock
        on = self.data.train.labels.device  # the images' device; streamed images stay on the host
        if on.type != "cpu":  # the loader's random numbers where its data is: no blocking host-to-device copies
            self.generator = torch.Generator(device=on)
            self.generator.manual_seed(recipe.seed)
        model = create_model(recipe.model.name, num_classes=self.data.num_classes,
                             in_channels=self.data.channels, image_size=self.data.image_size,
                             **recipe.model.kwargs)
        self.algorithms: list[Algorithm] = build_algorithms(recipe.algorithms, recipe=recipe)
        if recipe.model.name.startswith(TV_PREFIX):  # before it moves: the check runs on the CPU
            check_torchvision_input(model, recipe, self.data, self.algorithms)
        model = model.to(self.device)
        dtype = _DTYPES[recipe.precision]
        self.state = State(recipe=recipe, model=model, data=self.data, device=self.device,
                           num_classes=self.data.num_classes, loss_fn=soft_cross_entropy, autocast_dtype=dtype)
        self._by_event = {ev: [a for a in self.algorithms if ev in a.events] for ev in Event}
        self._bind_hooks()
        self.fire(Event.INIT)
        s = self.state
        if s.autocast_dtype == torch.float16:
            s.grad_scaler = torch.amp.GradScaler(self.device.type)
        s.optimizer = build_optimizer(recipe.optimizer, s.model)
        s.train_loader = BatchLoader(self.data.train.images, self.data.train.labels, recipe.batch_size,
                                     self.data.mean, self.data.std, augment=recipe.data.augment,
                                     hflip=self.data.hflip, crop_padding=self.data.crop_padding,
                                     generator=self.generator, channels_last=s.channels_last,
                                     workers=self.data.workers)
        self.rank, self.world = distributed.rank_and_world()
        self.ddp: nn.Module | None = None  # the model wrapped for data-parallel training (train/distributed.py)
        self._host_group: Any = None  # data-parallel: small collectives without device syncs (checkpoints)
        if self.world > 1:
            self._host_group = distributed.host_group()
            s.train_loader = distributed.shard_loader(s.train_loader, self.rank, self.world, recipe.seed)
            self.ddp = distributed.wrap_model(s.model, self.device, self.algorithms)
            distributed.reseed_rank(recipe.seed, self.rank)  # weights alike, augmentations not
        s.steps_per_epoch = len(s.train_loader)
        s.total_steps = max(1, round(recipe.epochs * s.steps_per_epoch))
        s.schedule = LRSchedule(recipe.schedule, s.steps_per_epoch, s.total_steps, recipe.budget)
        s.forward_backward = lambda: self._forward_backward(fire=False)
        from recipesearch.analysis.rungs import rung_step

        self._rung_at: dict[int, float] = {}  # step after which a rung reports -> its fraction
        for fraction in self.rungs if self.on_rung else ():
            step = rung_step(fraction, s.total_steps)
            if step is not None:
                self._rung_at.setdefault(step, fraction)
        if self.world > 1:  # collective: rank 0's interval, and its checkpoint's parts when it resumes
            self._resume_ranks(Path(resume_from) if resume_from is not None and self.rank == 0 else None)
        elif resume_from is not None:
            self._resume(Path(resume_from))

    def set_algorithms(self, algorithms: list[Algorithm]) -> None:
        self.algorithms = algorithms
        self._by_event = {ev: [a for a in algorithms if ev in a.events] for ev in Event}
        self._bind_hooks()

    def _bind_hooks(self) -> None:
        """The hook lists of the per-step events (the lists of ``_by_event`` themselves, so a hook appended to one
        after construction, as tests do, still runs); ``train()`` binds them again when it starts."""
        self._step_hooks = tuple(self._by_event[ev] for ev in _STEP_EVENTS)

    def _resume(self, path: Path) -> None:
        from recipesearch.train import checkpoint

        try:
            snapshot = checkpoint.read(path, self.recipe.id(), self.device)
        except checkpoint.CheckpointError as exc:
            self.warnings.append(f"not resumed, trained from step 0: {exc}")
            return
        checkpoint.restore(self, snapshot)
        self._went_on_from(snapshot)

    def _resume_ranks(self, path: Path | None) -> None:
        """Data-parallel start (train/distributed_checkpoint.py): every rank takes rank 0's checkpoint interval
        and, when rank 0 resumes from ``path``, restores its own part; rank 0's weights are broadcast and the
        restored model is wrapped in DDP again."""
        from recipesearch.train import checkpoint, distributed_checkpoint

        every, snapshot, refused = distributed_checkpoint.begin(path, self.checkpoint_every, self.recipe.id(),
                                                                self.device, self.rank, self.world, self._host_group)
        self.checkpoint_every = every  # the peers write nothing; they pause when rank 0 does
        if refused is not None:
            self.warnings.append(f"not resumed, trained from step 0: {refused}")
        if snapshot is None:
            return
        checkpoint.restore(self, snapshot)
        distributed_checkpoint.share_weights(self.state.model, snapshot.get("layout"))
        self.ddp = distributed.wrap_model(self.state.model, self.device, self.algorithms, sync=False)
        self._went_on_from(snapshot)

    def _went_on_from(self, snapshot: dict[str, Any]) -> None:
        """The counters a resumed run carries on from ``snapshot`` (restored by ``checkpoint.restore``)."""
        self._prior_seconds, self._prior_data_seconds = snapshot["train_seconds"], snapshot["data_seconds"]
        self.checkpoint_seconds = snapshot["checkpoint_seconds"]
        self.checkpoints = snapshot.get("checkpoints", 0)
        self.resumes = snapshot["resumes"] + 1
        self.resume_gap_seconds = snapshot["resume_gap_seconds"] + max(0.0, time.time() - snapshot["written_at"])
        self._resume_position = snapshot["loader"]
        self.resumed_at_step = int(snapshot["step"])

    def fire(self, event: Event) -> None:
        for algo in self._by_event[event]:
            if algo.match(event, self.state):
                algo.apply(event, self.state)

    def _run_hooks(self, hooks: list[Algorithm], event: Event) -> None:
        """``fire(event)`` with the event's hook list at hand (the per-step events: ``_bind_hooks``)."""
        state = self.state
        for algo in hooks:
            if algo.match(event, state):
                algo.apply(event, state)

    def _plain_fp32(self) -> bool:
        """Whether autocast would change nothing: fp32 and no autocast already on for this device. Then the forward
        and the loss run without entering ``torch.autocast(enabled=False)``, whose two contexts per step cost more
        than the loop's other work on a small model (about 25 µs a step on CPU); the kernels run are the same."""
        return self.state.autocast_dtype is None and not torch.is_autocast_enabled(self._device_type)

    def _forward_backward(self, fire: bool = True) -> torch.Tensor:
        s = self.state
        _, _, before_forward, after_forward, before_loss, after_loss, before_backward, after_backward, _, _ = \
            self._step_hooks if fire else _NO_STEP_HOOKS
        s.optimizer.zero_grad(set_to_none=True)
        if before_forward:
            self._run_hooks(before_forward, _BEFORE_FORWARD)
        model = s.model if self.ddp is None else self.ddp
        plain = self._plain_fp32()
        if plain:
            s.outputs = model(s.x)
        else:
            with s.autocast():
                s.outputs = model(s.x)
        if after_forward:
            self._run_hooks(after_forward, _AFTER_FORWARD)
        if before_loss:
            self._run_hooks(before_loss, _BEFORE_LOSS)
        if after_forward or before_loss:  # a hook may have switched the precision
            plain = self._plain_fp32()
        if plain:
            s.loss = s.loss_fn(s.outputs, s.y)
        else:
            with s.autocast():
                s.loss = s.loss_fn(s.outputs, s.y)
        if after_loss:
            self._run_hooks(after_loss, _AFTER_LOSS)
        if before_backward:
            self._run_hooks(before_backward, _BEFORE_BACKWARD)
        loss = s.loss
        (s.grad_scaler.scale(loss) if s.grad_scaler else loss).backward()
        if after_backward:
            self._run_hooks(after_backward, _AFTER_BACKWARD)
        return loss

    def _optimizer_step(self) -> None:
        s = self.state
        set_lr(s.optimizer, s.schedule.factor(s.step))
        if s.grad_scaler:
            s.grad_scaler.step(s.optimizer)
            s.grad_scaler.update()
        else:
            s.optimizer.step()

    def train(self) -> tuple[float, float]:
        """Run every step; return (train_seconds, data_seconds). Raises DivergenceError on NaN/inf loss.

        The device is synchronised at FIT_START and FIT_END only (and per epoch for ``on_epoch_end``):
        see the module docstring and ``recipesearch/train/timing.py``."""
        s, clock = self.state, self.clock
        losses = LossCheck(clock)
        self._bind_hooks()  # the hook lists as they are now (a restored checkpoint set its algorithms)
        after_dataloader, batch_start, *_, after_step, batch_end = self._step_hooks
        rung_at = self._rung_at
        # data-parallel: a step skipped on one rank only would set the ranks' weights apart (train/distributed.py)
        agree_skips = self.world > 1 and any(getattr(a, "skips_steps", False) for a in self.algorithms)
        s.model.train()
        clock.start()  # FIT_START's work (EMA's copy, patch whitening's estimate) is training
        resuming, self._resume_position = self._resume_position, None
        if resuming is None:
            self.fire(Event.FIT_START)  # a resumed run had its FIT_START in its first segment
        self._last_checkpoint = time.perf_counter()
        self._asked = (s.step, self._last_checkpoint, s.step + 1)  # data-parallel: (step, time) of the last ask, next
        while s.step < s.total_steps:
            if resuming is None:
                self.fire(Event.EPOCH_START)
                batches = iter(s.train_loader)
            else:  # the rest of the epoch the checkpoint was taken in (its EPOCH_START has fired)
                batches, resuming = s.train_loader.resume(resuming), None
            while s.step < s.total_steps:
                clock.data_begin()
                try:
                    s.x, s.y = next(batches)
                except StopIteration:
                    clock.data_cancel()
                    break
                s.samples_seen += s.y.shape[0]  # len(s.y), without Tensor.__len__'s Python checks
                if after_dataloader:
                    self._run_hooks(after_dataloader, _AFTER_DATALOADER)
                clock.data_end()
                if batch_start:
                    self._run_hooks(batch_start, _BATCH_START)
                s.skip_step = False
                loss = self._forward_backward()
                if agree_skips:
                    s.skip_step = distributed.agree_skip(s.skip_step, self.device)
                if not s.skip_step:
                    self._optimizer_step()
                s.step += 1
                if after_step:
                    self._run_hooks(after_step, _AFTER_STEP)
                if batch_end:
                    self._run_hooks(batch_end, _BATCH_END)
                losses.check(s.step, loss, last=s.step == s.total_steps)
                if s.step in rung_at:
                    self._report_rung(rung_at[s.step], losses)
                if self.checkpoint_every is not None and s.step < s.total_steps and self._checkpoint_due():
                    self._checkpoint(losses)
            self.fire(Event.EPOCH_END)
            if self.on_epoch_end:  # the callback reports host values (the loss, its own timestamps)
                clock.sync()
                losses.drain()
                self.on_epoch_end(s, {"epoch": s.epoch, "loss": float(s.loss.detach()), "step": s.step})
            s.epoch += 1
        self.fire(Event.FIT_END)
        seconds, data_seconds = clock.stop()
        losses.drain()  # CUDA: the last step's loss, read after the FIT_END sync
        return self._prior_seconds + seconds, self._prior_data_seconds + data_seconds

    def _checkpoint(self, losses: LossCheck) -> None:
        """Pause the clock, write the checkpoint, tell ``on_checkpoint`` (class docstring)."""
        from recipesearch.train import checkpoint

        train_seconds = self._prior_seconds + self.clock.pause()
        losses.drain()  # a diverged run fails here rather than saving a checkpoint
        paused = time.perf_counter()
        try:
            problem = checkpoint.unpicklable_reason(self)
            snapshot, path = None, None
            if problem is None:
                data_seconds = self._prior_data_seconds + self.clock.data_seconds_so_far()
                snapshot = checkpoint.capture(self, train_seconds, data_seconds, self.checkpoint_seconds)
                snapshot["checkpoints"] = self.checkpoints + 1
            target = self.checkpoint_dir / checkpoint.FILENAME if self.checkpoint_dir is not None else None
            if self.world > 1:  # every rank's snapshot, one file written by rank 0 (train/distributed_checkpoint.py)
                from recipesearch.train import distributed_checkpoint

                path, problem = distributed_checkpoint.save(snapshot, problem, self.state.model, target, self.rank,
                                                            self.world, self._host_group)
            elif problem is None:
                try:
                    path = checkpoint.write(snapshot, target)
                except Exception as exc:  # noqa: BLE001 - an unpicklable object, a full disk: train on without
                    problem = f"cannot save a checkpoint ({type(exc).__name__}: {str(exc)[:120]})"
            if problem is not None:
                self.checkpoint_every = None
                self.warnings.append(f"trained without checkpoints: {problem}")
                return
            self.checkpoints += 1
            if self.on_checkpoint is not None:
                self.on_checkpoint(path, {"step": self.state.step, "train_seconds": train_seconds,
                                          "checkpoints": self.checkpoints})
        finally:
            self.checkpoint_seconds += time.perf_counter() - paused
            self._last_checkpoint = time.perf_counter()
            self.clock.resume()

    def _checkpoint_due(self) -> bool:
        """Whether the checkpoint interval has passed on rank 0's host clock. Data-parallel: every rank asks rank 0
        at the same steps and gets its answer, with the step to ask next (about every ``ASK_SECONDS``: a host
        collective every step would cost about a millisecond each on gloo), so every rank pauses at one step."""
        now = time.perf_counter()
        due = now - self._last_checkpoint >= self.checkpoint_every  # type: ignore[operator]
        if self.world == 1:
            return due
        from recipesearch.train import distributed_checkpoint

        step, (last_step, last_time, ask_at) = self.state.step, self._asked
        if step < ask_at:
            return False
        gap = distributed_checkpoint.ask_gap((now - last_time) / max(1, step - last_step), self.checkpoint_every)
        due, gap = distributed_checkpoint.decide(due, gap, self._host_group)
        self._asked = (step, now, step + gap)
        return due

    def _report_rung(self, fraction: float, losses: LossCheck) -> None:
        """Pause the clock, evaluate on the rung split, ask ``on_rung`` whether to go on (class docstring)."""
        s = self.state
        train_seconds = self._prior_seconds + self.clock.pause()
        losses.drain()  # a diverged run fails here rather than reporting a rung
        paused = time.perf_counter()
        split = self.data.val if self.rung_split == "val" and self.data.val is not None and len(self.data.val) \
            else self.data.test
        # Data-parallel: rank 0 evaluates and asks; the other ranks wait for its answer (``agree``).
        acc, loss = evaluate(s, split.images, split.labels) if self.rank == 0 else (math.nan, math.nan)
        self.clock.sync()
        report = {"rung": fraction, "step": s.step, "accuracy": acc, "loss": loss, "train_seconds": train_seconds,
                  "rung_eval_seconds": time.perf_counter() - paused}
        try:
            go_on = self.on_rung(report) if self.rank == 0 else True  # type: ignore[misc]
            if self.world > 1:
                go_on = distributed.agree(go_on, self.device)
        finally:
            self.rung_seconds += time.perf_counter() - paused
        if not go_on:
            raise TrialPruned({**report, "rung_seconds": self.rung_seconds})
        self.clock.resume()

    def fit(self) -> TrainResult:
        from recipesearch.algorithms.interactions import interaction_warnings

        train_seconds, data_seconds = self.train()
        s = self.state
        if self.world > 1:  # every rank's samples; only rank 0 evaluates (its result is the trial's)
            s.samples_seen = distributed.total(s.samples_seen, self.device)
        eval_start = time.perf_counter()
        acc, loss = evaluate(s, self.data.test.images, self.data.test.labels) if self.rank == 0 \
            else (math.nan, math.nan)
        val_acc = val_loss = None
        if self.rank == 0 and self.data.val is not None and len(self.data.val):
            val_acc, val_loss = evaluate(s, self.data.val.images, self.data.val.labels)
        self.clock.sync()
        eval_seconds = time.perf_counter() - eval_start
        return TrainResult(
            accuracy=acc, loss=loss, val_accuracy=val_acc, val_loss=val_loss,
            train_seconds=train_seconds, eval_seconds=eval_seconds,
            throughput=s.samples_seen / train_seconds if train_seconds > 0 else 0.0,
            data_wait_fraction=data_seconds / train_seconds if train_seconds > 0 else 0.0,
            epochs=s.step / s.steps_per_epoch, steps=s.step, samples_seen=s.samples_seen,
            recipe_id=self.recipe.id(), device=str(self.device), threads=torch.get_num_threads(), workers=self.world,
            warnings=interaction_warnings([a.name for a in self.algorithms]) + self.warnings,
            rung_seconds=self.rung_seconds, checkpoint_seconds=self.checkpoint_seconds,
            checkpoints=self.checkpoints, resumes=self.resumes, resume_gap_seconds=self.resume_gap_seconds,
            resumed_at_step=self.resumed_at_step,
        )


def check_torchvision_input(model: nn.Module, recipe: Recipe, data: DataBundle, algorithms: list[Algorithm]) -> None:
    """A ``tv/`` model runs once on a 2-image batch of the data's shape, and of the smallest one that ColOut and
    progressive resizing shrink the batches to, before anything is timed: one that cannot take them (vit_b_32 or
    inception_v3 on 16 px images) is a one-line ConfigError naming the size it needs, not a crash at the first
    step (``models.tv.check_forward``: on the CPU, no gradients, once per process and shape)."""
    from recipesearch.algorithms.colout import ColOut
    from recipesearch.algorithms.progressive_resizing import ProgressiveResizing, scaled_size
    from recipesearch.models.tv import check_forward

    args = (model, recipe.model.name[len(TV_PREFIX):], data.num_classes, data.channels, data.image_size,
            recipe.model.kwargs)
    check_forward(*args)
    height = width = data.image_size
    shrinking = []
    for algorithm in algorithms:  # in their run order: ColOut (35) before progressive resizing (40)
        p = algorithm.params
        if isinstance(algorithm, ColOut):
            height, width = max(1, math.ceil((1 - p.p_row) * height)), max(1, math.ceil((1 - p.p_col) * width))
        elif isinstance(algorithm, ProgressiveResizing):
            scale = p.initial_scale  # the smallest: the schedule grows from it to 1
            height, width = scaled_size(height, scale, p.size_increment), scaled_size(width, scale, p.size_increment)
        else:
            continue
        shrinking.append(algorithm.name)
    if (height, width) != (data.image_size, data.image_size):
        check_forward(*args, shape=(height, width), field=f"algorithms.{shrinking[-1]}", cause=" and ".join(shrinking))


def fit(recipe: Recipe, data: DataBundle | None = None, **kwargs: Any) -> TrainResult:
    """Train ``recipe`` and return its measured result (the Python API behind ``recipesearch train``)."""
    return Trainer(recipe, data=data, **kwargs).fit()


def model_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
