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

import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from recipesearch.algorithms import Algorithm, build_algorithms
from recipesearch.data import BatchLoader, DataBundle, eval_batches, load_data
from recipesearch.models import create_model
from recipesearch.recipe import Recipe
from recipesearch.train.events import Event
from recipesearch.train.optim import build_optimizer, set_lr
from recipesearch.train.schedule import LRSchedule
from recipesearch.train.state import State
from recipesearch.train.timing import DeviceClock, LossCheck

_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


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
    device: str = "cpu"
    threads: int = 1
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
def evaluate(state: State, images: torch.Tensor, labels: torch.Tensor) -> tuple[float, float]:
    """Top-1 accuracy and mean loss of ``state.eval_model or state.model`` on a split (hard labels)."""
    model = state.eval_model or state.model
    was_training = model.training
    model.eval()
    correct, total_loss = 0, 0.0
    for x, y in eval_batches(images, labels, state.recipe.eval_batch_size, state.data.mean, state.data.std):
        if state.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        with state.autocast():
            out = model(x)
        total_loss += F.cross_entropy(out.float(), y, reduction="sum").item()
        correct += (out.argmax(1) == y).sum().item()
    model.train(was_training)
    n = max(1, len(labels))
    return correct / n, total_loss / n


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
    """

    def __init__(self, recipe: Recipe, data: DataBundle | None = None,
                 on_epoch_end: Callable[[State, dict[str, float]], None] | None = None,
                 rungs: tuple[float, ...] | list[float] = (),
                 on_rung: Callable[[dict[str, Any]], bool] | None = None, rung_split: str = "val"):
        self.recipe = recipe
        self.on_epoch_end = on_epoch_end
        self.rungs, self.on_rung, self.rung_split = tuple(rungs), on_rung, rung_split
        self.rung_seconds = 0.0
        if recipe.threads:
            torch.set_num_threads(recipe.threads)
        self.device = resolve_device(recipe.device)
        self.generator = seed_everything(recipe.seed)
        # One-off start-up, outside the timed region: decoding, model construction, model surgery.
        self.data = data if data is not None else load_data(recipe.data, self.device)
        self.clock = DeviceClock.for_device(self.device)  # tests swap in a counting fake of the CUDA clock
        on = self.data.train.images.device
        if on.type != "cpu":  # the loader's random numbers where its data is: no blocking host-to-device copies
            self.generator = torch.Generator(device=on)
            self.generator.manual_seed(recipe.seed)
        model = create_model(recipe.model.name, num_classes=self.data.num_classes,
                             in_channels=self.data.channels, image_size=self.data.image_size,
                             **recipe.model.kwargs).to(self.device)
        self.algorithms: list[Algorithm] = build_algorithms(recipe.algorithms, recipe=recipe)
        dtype = _DTYPES[recipe.precision]
        self.state = State(recipe=recipe, model=model, data=self.data, device=self.device,
                           num_classes=self.data.num_classes, loss_fn=soft_cross_entropy, autocast_dtype=dtype)
        self._by_event = {ev: [a for a in self.algorithms if ev in a.events] for ev in Event}
        self.fire(Event.INIT)
        s = self.state
        if s.autocast_dtype == torch.float16:
            s.grad_scaler = torch.amp.GradScaler(self.device.type)
        s.optimizer = build_optimizer(recipe.optimizer, s.model)
        s.train_loader = BatchLoader(self.data.train.images, self.data.train.labels, recipe.batch_size,
                                     self.data.mean, self.data.std, augment=recipe.data.augment,
                                     hflip=self.data.hflip, crop_padding=self.data.crop_padding,
                                     generator=self.generator, channels_last=s.channels_last)
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

    def fire(self, event: Event) -> None:
        for algo in self._by_event[event]:
            if algo.match(event, self.state):
                algo.apply(event, self.state)

    def _forward_backward(self, fire: bool = True) -> torch.Tensor:
        s = self.state
        s.optimizer.zero_grad(set_to_none=True)
        if fire:
            self.fire(Event.BEFORE_FORWARD)
        with s.autocast():
            s.outputs = s.model(s.x)
        if fire:
            self.fire(Event.AFTER_FORWARD)
            self.fire(Event.BEFORE_LOSS)
        with s.autocast():
            s.loss = s.loss_fn(s.outputs, s.y)
        if fire:
            self.fire(Event.AFTER_LOSS)
            self.fire(Event.BEFORE_BACKWARD)
        loss = s.loss
        (s.grad_scaler.scale(loss) if s.grad_scaler else loss).backward()
        if fire:
            self.fire(Event.AFTER_BACKWARD)
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
        s.model.train()
        clock.start()  # FIT_START's work (EMA's copy, patch whitening's estimate) is training
        self.fire(Event.FIT_START)
        while s.step < s.total_steps:
            self.fire(Event.EPOCH_START)
            batches = iter(s.train_loader)
            while s.step < s.total_steps:
                clock.data_begin()
                try:
                    s.x, s.y = next(batches)
                except StopIteration:
                    clock.data_cancel()
                    break
                s.samples_seen += len(s.y)
                self.fire(Event.AFTER_DATALOADER)
                clock.data_end()
                self.fire(Event.BATCH_START)
                s.skip_step = False
                loss = self._forward_backward()
                if not s.skip_step:
                    self._optimizer_step()
                s.step += 1
                self.fire(Event.AFTER_STEP)
                self.fire(Event.BATCH_END)
                losses.check(s.step, loss, last=s.step == s.total_steps)
                if s.step in self._rung_at:
                    self._report_rung(self._rung_at[s.step], losses)
            self.fire(Event.EPOCH_END)
            if self.on_epoch_end:  # the callback reports host values (the loss, its own timestamps)
                clock.sync()
                losses.drain()
                self.on_epoch_end(s, {"epoch": s.epoch, "loss": float(s.loss.detach()), "step": s.step})
            s.epoch += 1
        self.fire(Event.FIT_END)
        seconds, data_seconds = clock.stop()
        losses.drain()  # CUDA: the last step's loss, read after the FIT_END sync
        return seconds, data_seconds

    def _report_rung(self, fraction: float, losses: LossCheck) -> None:
        """Pause the clock, evaluate on the rung split, ask ``on_rung`` whether to go on (class docstring)."""
        s = self.state
        train_seconds = self.clock.pause()
        losses.drain()  # a diverged run fails here rather than reporting a rung
        paused = time.perf_counter()
        split = self.data.val if self.rung_split == "val" and self.data.val is not None and len(self.data.val) \
            else self.data.test
        acc, loss = evaluate(s, split.images, split.labels)
        self.clock.sync()
        report = {"rung": fraction, "step": s.step, "accuracy": acc, "loss": loss, "train_seconds": train_seconds,
                  "rung_eval_seconds": time.perf_counter() - paused}
        try:
            go_on = self.on_rung(report)  # type: ignore[misc]
        finally:
            self.rung_seconds += time.perf_counter() - paused
        if not go_on:
            raise TrialPruned({**report, "rung_seconds": self.rung_seconds})
        self.clock.resume()

    def fit(self) -> TrainResult:
        from recipesearch.algorithms.interactions import interaction_warnings

        train_seconds, data_seconds = self.train()
        s = self.state
        eval_start = time.perf_counter()
        acc, loss = evaluate(s, self.data.test.images, self.data.test.labels)
        val_acc = val_loss = None
        if self.data.val is not None and len(self.data.val):
            val_acc, val_loss = evaluate(s, self.data.val.images, self.data.val.labels)
        self.clock.sync()
        eval_seconds = time.perf_counter() - eval_start
        return TrainResult(
            accuracy=acc, loss=loss, val_accuracy=val_acc, val_loss=val_loss,
            train_seconds=train_seconds, eval_seconds=eval_seconds,
            throughput=s.samples_seen / train_seconds if train_seconds > 0 else 0.0,
            data_wait_fraction=data_seconds / train_seconds if train_seconds > 0 else 0.0,
            epochs=s.step / s.steps_per_epoch, steps=s.step, samples_seen=s.samples_seen,
            recipe_id=self.recipe.id(), device=str(self.device), threads=torch.get_num_threads(),
            warnings=interaction_warnings([a.name for a in self.algorithms]), rung_seconds=self.rung_seconds,
        )


def fit(recipe: Recipe, data: DataBundle | None = None, **kwargs: Any) -> TrainResult:
    """Train ``recipe`` and return its measured result (the Python API behind ``recipesearch train``)."""
    return Trainer(recipe, data=data, **kwargs).fit()


def model_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
