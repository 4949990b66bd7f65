"""The processes of a local Ray whose driver was killed: found and stopped by the next search that starts one.

A local Ray (``ray.init`` without ``--address``) is the driver's: its GCS, raylet, agents and trial workers.
After ``kill -9`` of the driver they live on, adopted by PID 1: the agents ignore SIGTERM, and trial workers
go on training, taking the cores the next search times its trials on. Every process of a local Ray inherits
the driver's environment, so the driver marks it (``OWNER_VAR`` = its PID and start time) before
``ray.init``; a later start finds the processes whose mark names a driver that is gone and kills them.
Linux only (``/proc``); elsewhere nothing is found. A cluster joined with ``--address`` is never touched.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

OWNER_VAR = "RECIPESEARCH_RAY_OWNER"


def _start_ticks(pid: int) -> str | None:
    """The process's start time (clock ticks since boot): a PID reused by another process has another."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def owner_mark(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{_start_ticks(pid)}"


def _alive(mark: str) -> bool:
    pid, _, ticks = mark.partition(":")
    return pid.isdigit() and _start_ticks(int(pid)) == ticks


def _mark_of(entry: Path) -> str | None:
    needle = f"{OWNER_VAR}=".encode()
    try:
        for item in (entry / "environ").read_bytes().split(b"\0"):
            if item.startswith(needle):
                return item[len(needle):].decode(errors="replace")
    except OSError:
        return None
    return None


def orphans() -> dict[int, str]:
    """{pid: owner mark} of the processes of local Rays whose driver is gone."""
    proc = Path("/proc")
    if not proc.is_dir():
        return {}
    found = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        mark = _mark_of(entry)
        if mark and mark != owner_mark() and not _alive(mark):
            found[int(entry.name)] = mark
    return found


def stop_orphans(grace: float = 3.0) -> int:
    """Kill the orphaned processes (SIGTERM, then SIGKILL after ``grace``: the agents ignore SIGTERM); how many."""
    pids = list(orphans())
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_start_ticks(p) for p in pids):
        time.sleep(0.1)
    still = orphans()  # one scan: the pids left that are still orphans (not a reused pid)
    for pid in pids:
        if pid in still:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    return len(pids)


def mark_this_driver() -> None:
    """Mark the local Ray this process is about to start (its processes inherit the environment)."""
    os.environ[OWNER_VAR] = owner_mark()
