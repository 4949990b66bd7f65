"""engine/interrupts.py: Ctrl-C / SIGTERM are held while the main thread has a connection of the study's
engine out, delivered once it is back; a second signal goes through at once."""
from __future__ import annotations

import os
import signal
import time

import pytest

from recipesearch.engine import interrupts
from recipesearch.engine.storage import make_storage


def _spin(seconds: float = 0.2) -> None:
    """Python bytecode for the handler to run between (a signal is handled at the next one)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


@pytest.fixture
def handlers():
    previous = interrupts.install()
    yield
    interrupts.restore(previous)


@pytest.mark.parametrize("sig", interrupts.SIGNALS, ids=["sigint", "sigterm"])
def test_a_signal_during_a_transaction_waits_until_the_connection_is_back(tmp_path, handlers, sig):
    from sqlalchemy import text

    engine = make_storage(f"sqlite:///{tmp_path / 'study.db'}").engine
    reached = []
    with pytest.raises(KeyboardInterrupt, match=f"signal {int(sig)}"):
        with engine.begin() as conn:  # a write transaction, as the storage's sessions open
            conn.execute(text("CREATE TABLE t (x INTEGER)"))
            os.kill(os.getpid(), sig)
            _spin()
            conn.execute(text("INSERT INTO t VALUES (1)"))
            reached.append("end of the transaction")
        _spin()  # the connection is back in the pool: the held signal comes now
        reached.append("after it")  # pragma: no cover - never reached
    assert reached == ["end of the transaction"]
    with engine.connect() as conn:  # committed, and no lock left: readable and writable at once
        assert conn.execute(text("SELECT x FROM t")).scalar() == 1
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO t VALUES (2)"))


def test_a_second_signal_while_one_is_held_goes_through_at_once(tmp_path, handlers):
    engine = make_storage(f"sqlite:///{tmp_path / 'study.db'}").engine
    conn = engine.connect()  # say a connection leaked: it never comes back
    try:
        os.kill(os.getpid(), signal.SIGINT)
        _spin()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            _spin()
    finally:
        conn.close()
    _spin()  # nothing held any more, nothing pending: no third interrupt


def test_without_a_connection_out_the_signal_interrupts_at_once(handlers):
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)
        _spin()


def test_restore_puts_the_previous_handlers_back():
    before = {sig: signal.getsignal(sig) for sig in interrupts.SIGNALS}
    previous = interrupts.install()
    assert all(signal.getsignal(sig) is interrupts._on_signal for sig in interrupts.SIGNALS)
    interrupts.restore(previous)
    assert {sig: signal.getsignal(sig) for sig in interrupts.SIGNALS} == before
