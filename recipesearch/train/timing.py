"""Timing the training steps and the data wait inside them, and the NaN/inf loss check, without per-step syncs.

On the CPU every operation finishes before the call returns, so host clocks measure the work itself:
``DeviceClock`` reads ``time.perf_counter`` around the data part of each step and the divergence
check (``LossCheck``) reads the loss every step, as the loop always did.

On CUDA the host only queues kernels and runs ahead of the GPU until something forces it to wait. A
``torch.cuda.synchronize`` per step (what the loop used to do after fetching each batch) throws that
overlap away: each step then pays the launch latency of the next one on an idle GPU, and the sync after
``next()`` also waited for the *previous* step's queued backward and optimizer kernels, so that compute
was booked as data wait. Here the device is synchronised only at FIT_START (``start``) and FIT_END
(``stop``), plus once per epoch when an ``on_epoch_end`` callback asks for host values (the loss it
reports; timestamps that mean something), so ``train_seconds`` is the host wall-clock between two points
where host and GPU agree: it includes everything queued in between, data wait included, and nothing
after (evaluation is timed separately by the caller).

What the data wait should mean on a GPU: the time the GPU spends producing input or sitting idle waiting
for it. Two candidate measures:

* host time around ``next()`` (no sync needed, fetching is host work): with device-resident data and
  on-GPU augmentation ``next()`` only *queues* the indexing/crop/flip kernels, so it reports microseconds
  while the GPU may spend real time in them; with a host-side pipeline (decoding workers) it counts host
  waiting that the GPU never notices while it still has queued steps to run. Wrong in both directions.
* CUDA events (used here): an event is recorded on the training stream just before the batch is fetched
  and another just after the AFTER_DATALOADER hooks (batch augmentation such as MixUp or resizing counts
  as data, as on the CPU). ``start.elapsed_time(end)`` is GPU-clock time between the stream reaching the
  first marker and reaching the second: the data kernels, plus any gap in which the GPU had run out of
  queued work and was waiting for the host to finish producing the batch. Host time spent while the GPU
  is still busy with earlier steps is (rightly) not counted. The events are read only once they have
  completed (``Event.query()``, which does not block), or after the sync at FIT_END, so they add two
  ``cudaEventRecord`` calls per step and no sync. Completed events go back to a pool.

Assumed, not yet measured on a GPU (the machine this was written on had none): that ``elapsed_time``
between events recorded on one stream is the right measure when a loader later moves its work to a side
stream (the training stream then waits on it, so the gap still shows between the markers); that
``query()`` and ``record()`` cost microseconds. What a GPU run should check is listed in the tests
(``tests/train/test_timing.py``: a fit under ``torch.cuda.set_sync_debug_mode("error")``).

Divergence (``LossCheck``): ``loss.item()`` is a blocking device-to-host copy, i.e. a sync. On CPU the
loss is still read every step. On CUDA, every ``every`` steps (and at the last step) the loss is copied
with ``non_blocking=True`` into pinned host memory and an event is recorded behind the copy; the value is
read once that event has completed (checked without blocking at each step), or after the FIT_END / epoch
sync. A diverged run therefore stops within a step or two of the checked step, and the error names the
checked step and its value, with the same message as on CPU.
"""
from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import torch

from recipesearch.errors import DivergenceError
from recipesearch.machine_load import CpuMeter, cpu_share

# Steps between loss checks where reading the loss is asynchronous (CUDA); on CPU every step.
ASYNC_CHECK_EVERY = 50
_FP32 = torch.float32


class DeviceClock:
    """Seconds of the timed region and of the data wait in it, synchronising the device only when asked.

    ``DeviceClock()`` is the host clock (CPU: nothing to synchronise). ``DeviceClock(synchronize, event,
    stream)`` is the asynchronous one: ``synchronize()`` blocks until the device is idle, ``event()``
    returns a timing event with ``record(stream)``, ``query()`` and ``elapsed_time(other)`` in
    milliseconds (``torch.cuda.Event``), ``stream()`` the stream to record on. Tests inject counting
    fakes to run the CUDA path on a CPU.
    """

    def __init__(self, synchronize: Callable[[], None] | None = None, event: Callable[[], Any] | None = None,
                 stream: Callable[[], Any] | None = None):
        if (synchronize is None) != (event is None):
            raise ValueError("an asynchronous clock needs both synchronize and event")
        self.asynchronous = synchronize is not None
        self._synchronize = synchronize
        self._new_event = event
        self._get_stream = stream
        self._stream: Any = None
        self._free: list[Any] = []  # recorded-and-read events, reusable
        self._pending: deque[tuple[Any, Any]] = deque()  # (begin, end) of data spans not yet read
        self._begin: Any = None
        self._t0 = 0.0
        self._start = 0.0
        self._paused_at = 0.0
        self.data_seconds = 0.0
        # the process's CPU seconds over exactly the spans counted (machine_load.py: a busy machine's mark)
        self.cpu = CpuMeter()
        self.segment_seconds = 0.0  # this segment's counted seconds, set by ``stop`` (a resumed run's last part)

    @classmethod
    def for_device(cls, device: torch.device) -> DeviceClock:
        if device.type != "cuda":
            return cls()
        return cls(synchronize=lambda: torch.cuda.synchronize(device),
                   event=lambda: torch.cuda.Event(enable_timing=True),
                   stream=lambda: torch.cuda.current_stream(device))

    def sync(self) -> None:
        """Wait for the device (a no-op on CPU). The loop calls it at FIT_START, FIT_END and per epoch
        only when an ``on_epoch_end`` callback needs host values."""
        if self._synchronize is not None:
            self._synchronize()

    def event(self) -> Any:
        """A recorded event on the training stream (asynchronous clocks only)."""
        ev = self._free.pop() if self._free else self._new_event()
        ev.record(self._stream)
        return ev

    def start(self) -> None:
        """FIT_START: synchronise once, then start the host wall-clock."""
        self.sync()
        self._stream = self._get_stream() if self._get_stream is not None else None
        self._pending.clear()
        self.data_seconds = 0.0
        self._start = time.perf_counter()
        self.cpu.start()

    def data_begin(self) -> None:
        """Just before the batch is fetched."""
        if self.asynchronous:
            self._collect()
            self._begin = self.event()
        else:
            self._t0 = time.perf_counter()

    def data_end(self) -> None:
        """After the AFTER_DATALOADER hooks: the batch is ready to train on."""
        if self.asynchronous:
            self._pending.append((self._begin, self.event()))
        else:
            self.data_seconds += time.perf_counter() - self._t0

    def data_cancel(self) -> None:
        """The fetch found the epoch exhausted: no batch, no data span."""
        if self.asynchronous and self._begin is not None:
            self._free.append(self._begin)
        self._begin = None

    def pause(self) -> float:
        """Stop counting (a rung's evaluation is not training): synchronise; return the seconds so far."""
        self.sync()
        self._paused_at = time.perf_counter()
        self.cpu.pause()
        return self._paused_at - self._start

    def data_seconds_so_far(self) -> float:
        """The data wait up to a ``pause`` (after its sync every pending span can be read)."""
        self._collect(complete=True)
        return self.data_seconds

    def resume(self) -> None:
        """Count again from here: the paused span is left out of the total."""
        self._start += time.perf_counter() - self._paused_at
        self.cpu.resume()

    def stop(self) -> tuple[float, float]:
        """FIT_END: synchronise once; return (seconds since ``start``, data-wait seconds)."""
        self.sync()
        seconds = time.perf_counter() - self._start
        self.cpu.pause()
        self.segment_seconds = seconds
        self._collect(complete=True)
        return seconds, self.data_seconds

    def cpu_share(self, threads: int) -> float:
        """This segment's CPU seconds / (its counted seconds x threads): about 1 when the run had its cores."""
        return cpu_share(self.cpu.seconds, self.segment_seconds, threads)

    def _collect(self, complete: bool = False) -> None:
        """Add up the data spans whose events the device has passed (all of them after a sync)."""
        pending = self._pending
        while pending and (complete or pending[0][1].query()):
            begin, end = pending.popleft()
            self.data_seconds += begin.elapsed_time(end) / 1000.0
            self._free += (begin, end)


class LossCheck:
    """Raises ``DivergenceError`` when the training loss is NaN or infinite, without a per-step sync.

    Host clock: the loss is read every step. Asynchronous clock: every ``every`` steps and at the last
    step a non-blocking copy of the loss goes to host memory behind an event; ``check`` reads the copies
    whose events have completed, ``drain`` (only after a sync) reads all of them.
    """

    def __init__(self, clock: DeviceClock, every: int | None = None):
        self.clock = clock
        self.every = every or (ASYNC_CHECK_EVERY if clock.asynchronous else 1)
        self._pending: deque[tuple[int, torch.Tensor, Any]] = deque()

    def check(self, step: int, loss: torch.Tensor, last: bool) -> None:
        if not self.clock.asynchronous:
            if self.every == 1 or step % self.every == 0 or last:
                # fp32 (as trainers' losses are): .item() reads what .detach().float().item() reads, without making
                # two tensors a step (a few µs); any other dtype is read in fp32, where a float64 loss can overflow
                value = loss.item() if loss.dtype is _FP32 else loss.detach().float().item()
                if not math.isfinite(value):
                    raise DivergenceError(step, value)
            return
        self._read()
        if step % self.every == 0 or last:
            host = loss.detach().float().to("cpu", non_blocking=True)  # pinned on CUDA: a true async copy
            self._pending.append((step, host, self.clock.event()))

    def drain(self) -> None:
        """Read every pending copy: call only after the device was synchronised."""
        self._read(complete=True)

    def _read(self, complete: bool = False) -> None:
        pending = self._pending
        while pending and (complete or pending[0][2].query()):
            step, host, ev = pending.popleft()
            self.clock._free.append(ev)
            self._verify(step, host.item())  # a host tensor whose copy has landed: no device access

    @staticmethod
    def _verify(step: int, value: float) -> None:
        if not math.isfinite(value):
            raise DivergenceError(step, value)
