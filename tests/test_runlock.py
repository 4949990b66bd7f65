"""recipesearch/runlock.py: one holder at a time; a dead holder's lock (kill -9 on this host, or a silent
heartbeat from another host) is taken over; the file is emptied, never deleted."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from recipesearch.runlock import STALE_S, FileLock, Held, lock_run_dir


def test_a_second_holder_is_refused_naming_the_first(tmp_path):
    first = FileLock(tmp_path / "x.lock", "the run directory X").acquire(["recipesearch", "search", "s.yaml"])
    with pytest.raises(Held) as info:
        FileLock(tmp_path / "x.lock", "the run directory X").acquire()
    text = str(info.value)
    assert f"pid {os.getpid()}" in text and "recipesearch search s.yaml" in text and "\n" not in text
    first.release()
    assert (tmp_path / "x.lock").read_text() == ""  # emptied, still there
    FileLock(tmp_path / "x.lock", "X").acquire().release()


def test_a_killed_holders_lock_is_taken_over(tmp_path):
    code = (f"import time; from recipesearch.runlock import FileLock; "
            f"FileLock({str(tmp_path / 'x.lock')!r}, 'X').acquire(); print('held', flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    with pytest.raises(Held):
        FileLock(tmp_path / "x.lock", "X").acquire()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    lock = FileLock(tmp_path / "x.lock", "X").acquire()  # its file still names the dead holder: stale
    assert json.loads((tmp_path / "x.lock").read_text())["pid"] == os.getpid()
    lock.release()


def test_a_holder_on_another_host_counts_while_its_heartbeat_is_fresh(tmp_path):
    path = tmp_path / "x.lock"
    other = {"pid": 4242, "host": "node-b", "started": time.time(), "heartbeat": time.time(), "command": ["rs"]}
    path.write_text(json.dumps(other))
    with pytest.raises(Held, match="from another host .*node-b"):
        FileLock(path, "X").acquire()
    path.write_text(json.dumps({**other, "heartbeat": time.time() - STALE_S - 1}))
    FileLock(path, "X").acquire().release()


def test_a_run_directory_that_cannot_be_made_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(Exception, match="--out: cannot create") as info:
        lock_run_dir(tmp_path / "file" / "run")
    assert type(info.value).__name__ == "UserError"


def test_a_run_directory_lock_writes_nothing_until_published(tmp_path):
    lock = lock_run_dir(tmp_path / "run")
    assert list((tmp_path / "run").iterdir()) == []  # a refused command leaves the folder as it was
    with pytest.raises(Held):
        lock_run_dir(tmp_path / "run")
    lock.publish(["recipesearch", "search"])
    with pytest.raises(Held, match="recipesearch search"):
        lock_run_dir(tmp_path / "run")
    lock.release()
    assert (tmp_path / "run" / ".driver.lock").read_text() == ""
    lock_run_dir(tmp_path / "run").release()
