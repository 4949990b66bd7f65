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

What the loop pauses for has a module each: rung reports (``rungs.py``), checkpoints and going on from one
(``checkpointing.py``; the file: ``checkpoint.py``); the data-parallel side is ``distributed.py``.
"""
from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from recipesearch.algorithms import Algorithm, build_algorithms
from recipesearch.algorithms.interactions import interaction_warnings
from recipesearch.data import BatchLoader, DataBundle, load_data
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State
from recipesearch.models import create_model
from recipesearch.models.registry import TV_PREFIX
from recipesearch.recipe import Recipe
from recipesearch.train import checkpoint, distributed, distributed_checkpoint, schedule_free
from recipesearch.train.checkpointing import Checkpoints, OnCheckpoint
from recipesearch.train.evaluation import evaluate
from recipesearch.train.optim import build_optimizer, set_lr
from recipesearch.train.result import TrainResult
from recipesearch.train.rungs import OnRung, Rungs, TrialPruned
from recipesearch.train.schedule import LRSchedule
from recipesearch.train.timing import DeviceClock, LossCheck
from recipesearch.train.tv_input import check_torchvision_input

# The trainer's API; TrainResult and TrialPruned (what ``fit`` returns and raises) live in their own modules.
__all__ = ["Trainer", "TrainResult", "TrialPruned", "evaluate", "fit", "model_parameters", "resolve_device",
           "seed_everything", "soft_cross_entropy"]

_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}

# The events of every training step, in the order they fire (hooks/events.py). The loop looks their hook lists up
# once per ``train()`` (``_bind_hooks``) and skips an event that no hook listens to without a call: an Event is a
# StrEnum whose hash runs in Python, and ten dict look-ups and calls per step were a few µs of a tiny model's step.
_STEP_EVENTS = (Event.AFTER_DATALOADER, Event.BATCH_START, Event.BEFORE_FORWARD, Event.AFTER_FORWARD,
                Event.BEFORE_LOSS, Event.AFTER_LOSS, Event.BEFORE_BACKWARD, Event.AFTER_BACKWARD, Event.AFTER_STEP,
                Event.BATCH_END)
(_AFTER_DATALOADER, _BATCH_START, _BEFORE_FORWARD, _AFTER_FORWARD, _BEFORE_LOSS, _AFTER_LOSS, _BEFORE_BACKWARD,
 _AFTER_BACKWARD, _AFTER_STEP, _BATCH_END) = _STEP_EVENTS


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("cpu")
    dev = torch.device(name)
    if dev.type == "cuda" and not torch.cuda.is_available():
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


_NO_STEP_HOOKS: tuple[list[Algorithm], ...] = tuple([] for _ in _STEP_EVENTS)  # SAM's second pass fires nothing


def initial_state(recipe: Recipe, data: DataBundle, device: torch.device) -> tuple[State, list[Algorithm]]:
    """What every run starts from: the model built for ``data`` on ``device``, the recipe's methods, and their
    INIT surgery applied (the Trainer goes on to the optimizer and loader; engine/method_fit.py stops here to see
    whether a space's methods apply to its model, without torch's optimizer start-up)."""
    model = create_model(recipe.model.name, num_classes=data.num_classes, in_channels=data.channels,
                         image_size=data.image_size, **recipe.model.kwargs)
    algorithms: list[Algorithm] = build_algorithms(recipe.algorithms, recipe=recipe)
    if recipe.model.name.startswith(TV_PREFIX):  # before it moves: the check runs on the CPU
        check_torchvision_input(model, recipe, data, algorithms)
    state = State(recipe=recipe, model=model.to(device), data=data, device=device, num_classes=data.num_classes,
                  loss_fn=soft_cross_entropy, autocast_dtype=_DTYPES[recipe.precision])
    for algo in algorithms:  # in their order, as ``Trainer.fire`` runs an event
        if Event.INIT in algo.events and algo.match(Event.INIT, state):
            algo.apply(Event.INIT, state)
    return state, algorithms


class Trainer:
    """Runs one recipe. ``fit()`` is the whole job; the pieces are methods so tests can drive them.

    ``rungs`` (fractions of the steps) with ``on_rung(report) -> bool``: the run pauses after each rung's step,
    reports and stops (``TrialPruned``) when ``on_rung`` says so (``train/rungs.py``). With ``checkpoint_every``
    seconds and a ``checkpoint_dir`` it writes checkpoints between steps and calls ``on_checkpoint``;
    ``resume_from`` (a checkpoint of the same recipe) goes on from one (``train/checkpointing.py``). The time
    both take is outside ``train_seconds`` (``TrainResult.rung_seconds``, ``checkpoint_seconds``).
    """

    def __init__(self, recipe: Recipe, data: DataBundle | None = None,
                 on_epoch_end: Callable[[State, dict[str, float]], None] | None = None,
                 rungs: tuple[float, ...] | list[float] = (), on_rung: OnRung | None = None, rung_split: str = "val",
                 checkpoint_every: float | None = None, checkpoint_dir: str | Path | None = None,
                 on_checkpoint: OnCheckpoint | None = None, resume_from: str | Path | None = None):
        self.recipe = recipe
        self.warnings: list[str] = []
        self.on_epoch_end = on_epoch_end
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
        self.state, self.algorithms = initial_state(recipe, self.data, self.device)
        self._by_event = {ev: [a for a in self.algorithms if ev in a.events] for ev in Event}
        self._bind_hooks()
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
        s.schedule = LRSchedule.of(recipe, s.steps_per_epoch, s.total_steps)
        s.forward_backward = lambda: self._forward_backward(fire=False)
        self.rungs = Rungs(tuple(rungs), on_rung, rung_split, s.total_steps, self.rank, self.world)
        self.checkpoints = Checkpoints(checkpoint_every, checkpoint_dir, on_checkpoint, self.warnings, self.rank,
                                       self.world, self._host_group)
        # data-parallel: a collective on every rank (rank 0's interval, and its checkpoint's parts when it resumes)
        self._resume(Path(resume_from) if resume_from is not None and self.rank == 0 else None)

    def set_algorithms(self, algorithms: list[Algorithm]) -> None:
        self.algorithms = algorithms
        self._by_event = {ev: [a for a in algorithms if ev in a.events] for ev in Event}
        self._bind_hooks()

    def _bind_hooks(self) -> None:
        """The hook lists of the per-step events (the lists of ``_by_event`` themselves, so a hook appended to one
        after construction, as tests do, still runs); ``train()`` binds them again when it starts."""
        self._step_hooks = tuple(self._by_event[ev] for ev in _STEP_EVENTS)

    def _resume(self, path: Path | None) -> None:
        """Go on from the checkpoint at ``path`` when it can be restored (``train/checkpointing.py``); a
        data-parallel run's restored weights are rank 0's, broadcast, and its model is wrapped in DDP again."""
        snapshot = self.checkpoints.open(path, self.recipe.id(), self.device)
        if snapshot is None:
            return
        checkpoint.restore(self.state, snapshot)
        self.set_algorithms(snapshot["algorithms"])
        self.rungs.seconds = snapshot["rung_seconds"]
        if self.world > 1:
            distributed_checkpoint.share_weights(self.state.model, snapshot.get("layout"))
            self.ddp = distributed.wrap_model(self.state.model, self.device, self.algorithms, sync=False)
        self.checkpoints.went_on_from(snapshot)

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
        s, clock, checkpoints = self.state, self.clock, self.checkpoints
        losses = LossCheck(clock)
        self._bind_hooks()  # the hook lists as they are now (a restored checkpoint set its algorithms)
        after_dataloader, batch_start, *_, after_step, batch_end = self._step_hooks
        rung_at = self.rungs.at
        # data-parallel: a step skipped on one rank only would set the ranks' weights apart (train/distributed.py)
        agree_skips = self.world > 1 and any(getattr(a, "skips_steps", False) for a in self.algorithms)
        s.model.train()
        schedule_free.train_mode(s.optimizer)  # a schedule-free optimizer: the model holds the weights it steps
        clock.start()  # FIT_START's work (EMA's copy, patch whitening's estimate) is training
        resuming, checkpoints.position = checkpoints.position, None
        if resuming is None:
            self.fire(Event.FIT_START)  # a resumed run had its FIT_START in its first segment
        checkpoints.start(s.step)
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
                    with schedule_free.averaged(s.optimizer):  # evaluated at the averaged weights, if any
                        self.rungs.report(rung_at[s.step], s, clock, losses, checkpoints.prior_seconds)
                if checkpoints.every is not None and s.step < s.total_steps and checkpoints.due(s.step):
                    checkpoints.write(s, self.algorithms, self.recipe.id(), self.rungs.seconds, clock, losses)
            self.fire(Event.EPOCH_END)
            if self.on_epoch_end:  # the callback reports host values (the loss, its own timestamps)
                clock.sync()
                losses.drain()
                self.on_epoch_end(s, {"epoch": s.epoch, "loss": float(s.loss.detach()), "step": s.step})
            s.epoch += 1
        # schedule-free: the averaged weights, their BatchNorm statistics recomputed (training time), before
        # FIT_END's methods (EMA/SWA's copies, flip TTA's wrapper) choose what is evaluated
        schedule_free.eval_mode(s.optimizer, s.model, s.train_loader)
        self.fire(Event.FIT_END)
        seconds, data_seconds = clock.stop()
        losses.drain()  # CUDA: the last step's loss, read after the FIT_END sync
        return checkpoints.prior_seconds + seconds, checkpoints.prior_data_seconds + data_seconds

    def fit(self) -> TrainResult:
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
            rung_seconds=self.rungs.seconds, checkpoint_seconds=self.checkpoints.seconds,
            checkpoints=self.checkpoints.written, resumes=self.checkpoints.resumes,
            resume_gap_seconds=self.checkpoints.resume_gap_seconds, resumed_at_step=self.checkpoints.resumed_at_step,
            cpu_share=self.clock.cpu_share(torch.get_num_threads()),
        )


def fit(recipe: Recipe, data: DataBundle | None = None, **kwargs: Any) -> TrainResult:
    """Train ``recipe`` and return its measured result (the Python API behind ``recipesearch train``)."""
    return Trainer(recipe, data=data, **kwargs).fit()


def model_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
