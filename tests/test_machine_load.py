"""recipesearch/machine_load.py: CPU seconds over the clock's intervals, load average, GPU sharing."""
from __future__ import annotations

import math
import time

from recipesearch import machine_load
from recipesearch.machine_load import CpuMeter, GpuWatch, cpu_share


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_the_meter_counts_only_while_running():
    meter = CpuMeter()
    meter.start()
    spin(0.2)
    running = meter.pause()
    time.sleep(0.2)  # paused: not counted, and sleeping costs no CPU anyway
    spin(0.05)  # paused: not counted
    assert meter.pause() == running and running > 0
    meter.resume()
    spin(0.1)
    assert meter.pause() > running
    assert math.isnan(cpu_share(meter.seconds, 0.0, 1)) and cpu_share(meter.seconds, meter.seconds, 2) == 0.5


def test_load_average_is_a_number():
    assert machine_load.load_1m() >= 0


def test_gpu_watch_without_nvidia_smi_is_unknown(monkeypatch):
    monkeypatch.setattr(machine_load.shutil, "which", lambda name: None)
    watch = GpuWatch(0, interval=0.01).start()
    time.sleep(0.05)
    assert watch.stop() is None


def test_gpu_watch_sees_another_process(monkeypatch):
    import os

    monkeypatch.setattr(machine_load, "_compute_pids", lambda index: {os.getpid(), 999999})
    watch = GpuWatch(0, interval=60)
    assert watch.start().stop() is True
    monkeypatch.setattr(machine_load, "_compute_pids", lambda index: {12345})  # our PID not visible: unknown
    assert GpuWatch(0, interval=60).start().stop() is None
