"""How busy the machine was while a trial trained: its CPU share, the load average, other GPU processes.

A speedup is a ratio of two wall-clock times measured at different moments; another job on the same
cores (or the same GPU) makes whichever arm ran beside it look slow. These readings go into every
trial's result (trials.csv) so a busy trial can be seen, flagged (``analysis.load``) and run again
(``--strict-timing``):

- ``CpuMeter``: the process's CPU seconds (all its threads) over exactly the intervals the trainer's clock
  runs; ``cpu_share`` = those / (train_seconds x threads). Loader worker processes are not counted (their
  work shows as data wait in the trainer's own numbers).
- ``load_1m``: the 1-minute load average (``os.getloadavg``), at a trial's start and end; NaN where the
  platform has none.
- ``GpuWatch``: on a GPU, polls ``nvidia-smi`` for compute processes on the trial's device other than this
  one; None when that cannot be told (no nvidia-smi, or a process namespace that hides PIDs).
"""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import threading
import time


def load_1m() -> float:
    try:
        return float(os.getloadavg()[0])
    except (OSError, AttributeError):
        return math.nan


def cpu_share(cpu_seconds: float | None, train_seconds: float, threads: int) -> float:
    """CPU seconds / (train_seconds x threads); NaN where either is unknown."""
    denominator = float(train_seconds) * max(1, int(threads or 1))
    if cpu_seconds is None or not math.isfinite(cpu_seconds) or not denominator > 0:
        return math.nan
    return float(cpu_seconds) / denominator


class CpuMeter:
    """Process CPU seconds accumulated between ``start``/``resume`` and ``pause`` (the trainer clock's)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._since: float | None = None

    def start(self) -> None:
        self._since = time.process_time()

    resume = start

    def pause(self) -> float:
        if self._since is not None:
            self.seconds += time.process_time() - self._since
            self._since = None
        return self.seconds


def _compute_pids(device_index: int) -> set[int] | None:
    """PIDs of compute processes on GPU ``device_index`` per nvidia-smi; None when it cannot be asked."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        uuid = subprocess.run([exe, "--query-gpu=uuid", "--format=csv,noheader", "-i", str(device_index)],
                              capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        apps = subprocess.run([exe, "--query-compute-apps=pid,gpu_uuid", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    pids = set()
    for line in apps.splitlines():
        pid, _, gpu = (part.strip() for part in line.partition(","))
        if gpu == uuid and pid.isdigit():
            pids.add(int(pid))
    return pids


class GpuWatch:
    """Polls, every ``interval`` seconds while training, whether another process computes on our GPU."""

    def __init__(self, device_index: int, interval: float = 15.0):
        self.device_index, self.interval = int(device_index), float(interval)
        self.shared: bool | None = None  # None: unknown
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _poll(self) -> None:
        pids = _compute_pids(self.device_index)
        if pids is None or os.getpid() not in pids:
            return  # cannot tell (no nvidia-smi, or PIDs of another namespace): leave what is known
        others = bool(pids - {os.getpid()})
        self.shared = others or bool(self.shared)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._poll()

    def start(self) -> GpuWatch:
        self._thread = threading.Thread(target=self._run, name="recipesearch-gpu-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> bool | None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        self._poll()  # one reading at the end, so a short trial is not left unknown
        return self.shared
