"""One driver at a time: a lock held for the life of a search, on its run directory and on its study.

The holder keeps an ``flock`` on the run directory itself (or on a lock file beside an SQLite study), which
the kernel drops when the process ends, kill -9 included: on the same host a lock whose flock can be taken
is stale. Nothing is written until the search really starts (a refused command changes nothing in the run
directory); then ``publish`` writes the holder (PID, host, command, start, heartbeat) as JSON into the info
file (``.driver.lock``), for the refusal's words and for hosts that share the folder: a holder on another
host is trusted while its heartbeat, rewritten every ``HEARTBEAT_S``, is younger than ``STALE_S``. The info
file is emptied on release, never deleted.
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from recipesearch.errors import UserError

LOCK_NAME = ".driver.lock"  # in a run directory; every check of "is it empty" leaves it out
HEARTBEAT_S = 30.0
STALE_S = 300.0  # a holder on another host whose heartbeat is this old is gone


class Held(UserError):
    """The lock is held by a live driver."""


def _holder_text(info: dict[str, Any]) -> str:
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.get("started", 0)))
    command = " ".join(info.get("command") or [])[:160]
    return f"pid {info.get('pid')} on {info.get('host')} since {since}" + (f" ({command})" if command else "")


class FileLock:
    """An exclusive lock on ``path`` (a folder, or a file made if missing) for ``what`` (the refusal's words:
    "the run directory X"); the holder's details go to ``info_path`` (default: ``path`` itself)."""

    def __init__(self, path: str | Path, what: str, info_path: str | Path | None = None):
        self.path, self.what = Path(path), what
        self.info_path = Path(info_path) if info_path is not None else self.path
        self._fd: int | None = None
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self._info: dict[str, Any] = {}

    def acquire(self, command: list[str] | None = None, publish: bool = True) -> FileLock:
        """Take the lock or raise ``Held`` in one line naming the holder; ``publish``: write the info now."""
        if self.path.is_dir():
            fd = os.open(self.path, os.O_RDONLY)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise Held(f"another recipesearch is driving {self.what} right now ({_holder_text(self._read())}); "
                       "wait for it to finish, or stop it (Ctrl-C) first") from None
        info = self._read()
        other_host = info.get("host") and info.get("host") != socket.gethostname()
        if other_host and time.time() - float(info.get("heartbeat", 0)) < STALE_S:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            raise Held(f"another recipesearch is driving {self.what} from another host ({_holder_text(info)}, "
                       f"alive {time.time() - float(info.get('heartbeat', 0)):.0f} s ago); wait for it, or after "
                       f"{STALE_S:.0f} s without its heartbeat it counts as gone")
        self._fd = fd
        if publish:
            self.publish(command)
        return self

    def publish(self, command: list[str] | None = None) -> None:
        """Write the holder's details into the info file and keep its heartbeat going until ``release``."""
        if self._fd is None or self._beat is not None:
            return
        now = time.time()
        self._info = {"pid": os.getpid(), "host": socket.gethostname(), "started": now, "heartbeat": now,
                      "command": list(command if command is not None else sys.argv)}
        self._write()
        self._beat = threading.Thread(target=self._heartbeat, name="recipesearch-lock-heartbeat", daemon=True)
        self._beat.start()

    def _write(self) -> None:
        with open(self.info_path, "w", encoding="utf-8") as f:
            f.write(json.dumps(self._info))

    def _read(self) -> dict[str, Any]:
        try:
            text = self.info_path.read_text(encoding="utf-8", errors="replace") if self.info_path.is_file() else ""
            info = json.loads(text) if text.strip() else {}
        except (OSError, ValueError):
            return {}
        return info if isinstance(info, dict) else {}

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            self._info["heartbeat"] = time.time()
            try:
                self._write()
            except OSError:
                pass  # the folder went away or is read-only now: the flock still holds

    def release(self) -> None:
        self._stop.set()
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if self._beat is not None and self.info_path.is_file():
                self.info_path.write_text("")
        except OSError:
            pass
        finally:
            self._beat = None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    @property
    def held(self) -> bool:
        return self._fd is not None


def run_dir_lock(root: str | Path) -> FileLock:
    return FileLock(root, f"the run directory {root}", info_path=Path(root) / LOCK_NAME)


def sqlite_study_lock(db_path: str | Path, study: str) -> FileLock:
    """The lock of study ``study`` in the SQLite file ``db_path`` (a --storage shared by run directories)."""
    import hashlib

    db = Path(db_path)
    key = hashlib.blake2b(study.encode(), digest_size=6).hexdigest()
    return FileLock(db.with_name(f".{db.name}.{key}.lock"), f"the study {study!r} in {db}")


def lock_run_dir(root: str | Path) -> FileLock:
    """The run directory's lock, taken (the folder made if need be; nothing written in it until ``publish``),
    or one line: held, or the folder cannot be made."""
    lock = run_dir_lock(root)
    try:
        Path(root).mkdir(parents=True, exist_ok=True)
        return lock.acquire(publish=False)
    except OSError as exc:
        raise UserError(f"--out: cannot create {root}: {exc.strerror or exc}") from None
