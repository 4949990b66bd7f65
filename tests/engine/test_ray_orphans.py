"""engine/ray_orphans.py: processes marked by a driver that is gone are found and stopped; a live driver's are not."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from recipesearch.engine import ray_orphans

# Ignores SIGTERM, as Ray's agents left by a killed driver do.
STUBBORN = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); "
            "time.sleep(120)")


def _start(mark: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", STUBBORN], env={**os.environ, ray_orphans.OWNER_VAR: mark},
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "up"
    return proc


def test_a_gone_drivers_processes_are_stopped_and_a_live_ones_kept():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone_mark = ray_orphans.owner_mark(gone.pid)  # its start time, taken while it lives
    gone.wait()
    orphan = _start(gone_mark)
    kept = _start(ray_orphans.owner_mark())  # this process is alive: its Ray is not an orphan
    try:
        assert kept.pid not in ray_orphans.orphans()
        # (No count nor membership asserted: a search another xdist worker starts meanwhile stops every orphan
        # too, this one included. Whichever stop_orphans gets it, only orphans() can have named it.)
        ray_orphans.stop_orphans(grace=0.5)
        assert orphan.wait(timeout=10) == -signal.SIGKILL  # SIGTERM ignored: killed
        time.sleep(0.2)
        assert kept.poll() is None
    finally:
        for p in (orphan, kept):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_a_reused_pid_is_not_the_driver():
    # the same PID with another start time is another process: its mark's owner is gone
    assert not ray_orphans._alive(f"{os.getpid()}:0")
    assert ray_orphans._alive(ray_orphans.owner_mark())
