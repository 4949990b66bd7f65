"""Honest GPU timing (issue 15, item 3): the timed loop synchronises the device at FIT_START and FIT_END only.

There is no GPU here, so the CUDA path runs on the CPU with the trainer's ``DeviceClock`` built from
counting fakes: ``FakeGPU.synchronize`` counts syncs and makes every recorded event complete;
``FakeEvent`` completes only once ``lag`` later events were recorded (a GPU running behind the host),
refuses ``elapsed_time`` before it completed (like CUDA's not-ready error) and fails on a blocking
``synchronize``. ``torch.cuda.synchronize`` is patched to fail and ``Tensor.item`` (a blocking read on a
GPU tensor) to count.
"""
from __future__ import annotations

import math
import time

import pytest
import torch

from recipesearch.algorithms.base import Algorithm
from recipesearch.errors import DivergenceError
from recipesearch.hooks.events import Event
from recipesearch.train.loop import Trainer
from recipesearch.train.timing import ASYNC_CHECK_EVERY, DeviceClock


class FakeGPU:
    def __init__(self, lag: int = 3):
        self.lag, self.recorded, self.synced_upto = lag, 0, 0
        self.syncs = self.events_created = 0

    def synchronize(self) -> None:
        self.syncs += 1
        self.synced_upto = self.recorded

    def event(self) -> FakeEvent:
        self.events_created += 1
        return FakeEvent(self)

    def clock(self) -> DeviceClock:
        return DeviceClock(synchronize=self.synchronize, event=self.event, stream=lambda: "stream")


class FakeEvent:
    def __init__(self, gpu: FakeGPU):
        self.gpu, self.index, self.t = gpu, 0, 0.0

    def record(self, stream=None) -> None:
        assert stream == "stream"
        self.gpu.recorded += 1
        self.index, self.t = self.gpu.recorded, time.perf_counter()

    def query(self) -> bool:
        g = self.gpu
        return self.index > 0 and (self.index <= g.synced_upto or g.recorded - self.index >= g.lag)

    def elapsed_time(self, end: FakeEvent) -> float:
        if not (self.query() and end.query()):
            raise RuntimeError("CUDA error: device not ready")
        return (end.t - self.t) * 1000.0

    def synchronize(self) -> None:
        raise AssertionError("Event.synchronize blocks the host")


@pytest.fixture
def counters(monkeypatch):
    """Fails on torch.cuda.synchronize; counts Tensor.item calls."""
    seen = {"item": 0}
    real_item = torch.Tensor.item

    def item(self):
        seen["item"] += 1
        return real_item(self)

    def no_sync(*args, **kwargs):
        raise AssertionError("torch.cuda.synchronize called directly, not through the trainer's clock")

    monkeypatch.setattr(torch.Tensor, "item", item)
    monkeypatch.setattr(torch.cuda, "synchronize", no_sync)
    return seen


def _fake_cuda(trainer: Trainer, lag: int = 3) -> FakeGPU:
    gpu = FakeGPU(lag)
    trainer.clock = gpu.clock()
    return gpu


class SlowLoader:
    """The trainer's loader, 5 ms of host work before each batch."""

    def __init__(self, loader, delay: float = 0.005):
        self.loader, self.delay = loader, delay

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        for batch in self.loader:
            time.sleep(self.delay)
            yield batch


def test_cpu_clock_never_syncs_and_checks_the_loss_every_step(tiny_recipe, counters):
    trainer = Trainer(tiny_recipe(max_duration=2))
    assert not trainer.clock.asynchronous
    seconds, data_seconds = trainer.train()
    steps = trainer.state.step
    assert steps == 88 and counters["item"] == steps  # unchanged CPU behaviour: every step read
    assert 0 < data_seconds < seconds


def test_cuda_path_syncs_at_fit_start_and_fit_end_only(tiny_recipe, counters):
    trainer = Trainer(tiny_recipe(max_duration=2))
    gpu = _fake_cuda(trainer)
    seconds, data_seconds = trainer.train()
    steps = trainer.state.step
    assert steps == 88
    assert gpu.syncs == 2  # FIT_START, FIT_END: O(1) per fit, not per step
    # loss read at steps 50 and 88 from landed non-blocking copies, never per step
    assert counters["item"] == len({*range(ASYNC_CHECK_EVERY, steps + 1, ASYNC_CHECK_EVERY), steps})
    assert gpu.recorded >= 2 * steps  # two data-span events a step ...
    assert gpu.events_created <= 2 * gpu.lag + 4  # ... from a pool: read events are recorded again
    assert 0 < data_seconds < seconds


def test_epoch_callback_and_evaluation_add_one_sync_each(tiny_recipe, counters):
    epochs = []
    trainer = Trainer(tiny_recipe(max_duration=2), on_epoch_end=lambda s, m: epochs.append(m["loss"]))
    gpu = _fake_cuda(trainer)
    trainer.train()
    assert len(epochs) == 2 and gpu.syncs == 2 + len(epochs)  # the callback reads host values per epoch

    trainer = Trainer(tiny_recipe(max_duration=1))
    gpu = _fake_cuda(trainer)
    result = trainer.fit()
    assert gpu.syncs == 3 and result.train_seconds > 0  # + one after evaluation, outside train_seconds


def test_data_wait_counts_the_fetch_on_both_clocks(tiny_recipe):
    for fake in (False, True):
        trainer = Trainer(tiny_recipe(max_duration=1))
        if fake:
            _fake_cuda(trainer, lag=5)
        trainer.state.train_loader = SlowLoader(trainer.state.train_loader)
        seconds, data_seconds = trainer.train()
        assert trainer.state.step * 0.005 <= data_seconds < seconds, fake


def test_divergence_on_the_cuda_path_raises_the_same_error_without_a_sync(tiny_recipe, counters):
    recipe = tiny_recipe(max_duration=2, optimizer={"lr": 1e20}, schedule={"warmup_epochs": 0})
    with pytest.raises(DivergenceError, match="diverged") as cpu:
        Trainer(recipe).train()
    trainer = Trainer(recipe)
    gpu = _fake_cuda(trainer)
    with pytest.raises(DivergenceError, match=f"diverged: loss is .* at step {ASYNC_CHECK_EVERY}$") as dev:
        trainer.train()
    assert dev.value.step == ASYNC_CHECK_EVERY and not math.isfinite(dev.value.loss)
    assert gpu.syncs == 1  # the FIT_START sync: found from the landed copy, mid-run
    assert ASYNC_CHECK_EVERY < trainer.state.step <= ASYNC_CHECK_EVERY + gpu.lag  # a few steps later
    assert cpu.value.step < ASYNC_CHECK_EVERY  # CPU: read every step, found at once (same message form)
    assert str(cpu.value) == f"diverged: loss is {cpu.value.loss} at step {cpu.value.step}"


def test_last_step_divergence_is_found_after_fit_end(tiny_recipe, monkeypatch):
    trainer = Trainer(tiny_recipe(max_duration=1))
    gpu = _fake_cuda(trainer, lag=10**6)  # nothing completes before a sync
    real = trainer._forward_backward

    def nan_at_the_end(fire=True):
        loss = real(fire)
        return loss * float("nan") if trainer.state.step == trainer.state.total_steps - 1 else loss

    monkeypatch.setattr(trainer, "_forward_backward", nan_at_the_end)
    with pytest.raises(DivergenceError, match=f"at step {trainer.state.total_steps}$"):
        trainer.train()
    assert gpu.syncs == 2


class SyncsForbidden(Algorithm):
    """Between FIT_START and FIT_END any device sync raises (torch.cuda.set_sync_debug_mode)."""

    name = "syncs_forbidden"
    description = "-"
    citation = "-"
    events = frozenset({Event.FIT_START, Event.FIT_END})

    def apply(self, event, state):
        torch.cuda.set_sync_debug_mode("error" if event is Event.FIT_START else "default")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_real_gpu_fit_has_no_sync_between_fit_start_and_fit_end(tiny_recipe):
    trainer = Trainer(tiny_recipe(max_duration=2, device="cuda"))  # 88 steps: past the loss check at 50
    assert trainer.clock.asynchronous
    for event in SyncsForbidden.events:
        trainer._by_event[event].append(SyncsForbidden())
    try:
        result = trainer.fit()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert result.steps == 88 and result.accuracy > 0.5
    assert 0 <= result.data_wait_fraction < 1


def test_a_fit_records_its_cpu_share(tiny_recipe):
    """The process's CPU seconds over the counted spans / (train_seconds x threads): finite and positive (how
    close to 1 depends on what else the machine runs, so no bound is asserted on it)."""
    from recipesearch.train.loop import fit

    result = fit(tiny_recipe(max_duration=1))
    assert math.isfinite(result.cpu_share) and result.cpu_share > 0
