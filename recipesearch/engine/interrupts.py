"""Ctrl-C and SIGTERM end a search as a ``KeyboardInterrupt``, but never while the driver is using a database
connection of the study.

Python raises ``KeyboardInterrupt`` wherever the main thread happens to be. Raised inside SQLAlchemy in the
middle of a write, it can leave that connection checked out with its transaction open; the driver's next
step, recording the trials in flight as interrupted, then waited for the lock its own lost connection held
(SQLite's 60 s timeout), failed with "database is locked", and left trials RUNNING (seen in the test suite's
Ctrl-C case under load). So while a connection the main thread took from the study's pool is out, the signal
is held, and it is delivered as soon as the last one is back. A second signal while one is held goes through
at once: a leaked connection never keeps the search from stopping.

``hold_during_transactions(engine)`` hooks a storage's SQLAlchemy engine (``study.make_storage``);
``install()`` / ``restore()`` put the handlers in place for the length of a search (``engine/driver.py``).
"""
from __future__ import annotations

import signal
import threading
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)  # SIGTERM: what `timeout`, `kill` and batch schedulers send

_out: set[int] = set()  # connection records the main thread has checked out of a hooked pool
_pending: int | None = None  # a signal that came while one was out


def _on_signal(signum: int, frame: Any) -> None:
    global _pending
    if _out and _pending is None:
        _pending = signum
        return
    _pending = None
    raise KeyboardInterrupt(f"signal {signum}")


def _checkout(dbapi_connection: Any, record: Any, proxy: Any) -> None:
    if threading.current_thread() is threading.main_thread():  # signals only ever interrupt the main thread
        _out.add(id(record))


def _checkin(dbapi_connection: Any, record: Any) -> None:
    # Any thread: the garbage collector may return a connection the main thread took.
    _out.discard(id(record))
    if not _out and _pending is not None:
        # Raised again for the handler, which runs at the main thread's next bytecode, now that none is out.
        signal.raise_signal(_pending)


def hold_during_transactions(engine: Any) -> None:
    """Hold the search's interrupt while the main thread has one of ``engine``'s connections."""
    from sqlalchemy import event

    if not event.contains(engine, "checkout", _checkout):
        event.listen(engine, "checkout", _checkout)
        event.listen(engine, "checkin", _checkin)


def install() -> dict[int, Any] | None:
    """Our handler for SIGINT and SIGTERM; returns the ones it replaced (None off the main thread, where Python
    cannot set a handler: an API user's thread keeps its own)."""
    global _pending
    if threading.current_thread() is not threading.main_thread():
        return None
    _pending = None
    return {sig: signal.signal(sig, _on_signal) for sig in SIGNALS}


def restore(previous: dict[int, Any] | None) -> None:
    global _pending
    _pending = None
    for sig, handler in (previous or {}).items():
        signal.signal(sig, handler)
