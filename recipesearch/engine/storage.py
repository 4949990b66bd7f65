"""Where a search's Optuna study lives: open ``--storage`` (or the run directory's SQLite file), take the lock
that lets one search drive a study, and create or load the study itself.

Every failure is one line naming ``--storage``, never with the URL's password: a bad URL, a missing driver, a
server that is down or refuses us, another search holding the study.
"""
from __future__ import annotations

import re
import time
import warnings
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

import optuna

from recipesearch.engine import interrupts
from recipesearch.engine.sampler_view import HideRepeats
from recipesearch.engine.study import OWNER, sampler_sees
from recipesearch.errors import UserError
from recipesearch.rundir import redact_url
from recipesearch.trials_columns import ACCURACY

if TYPE_CHECKING:
    from recipesearch.space import SearchSpace


# A server that does not answer is reported after this many seconds instead of hanging the search's start.
CONNECT_TIMEOUT_S = 10


def storage_url(url: str) -> str:
    """The SQLAlchemy URL for ``--storage``: a plain ``postgresql://`` (or ``postgres://``) URL goes through
    psycopg 3, the driver of ``pip install recipesearch[postgres]`` (SQLAlchemy's default, psycopg2, is not
    a dependency); a URL naming its driver (``postgresql+psycopg2://``) is left as it is. The password is
    percent-encoded as SQLAlchemy expects, so one with a ``@``, ``/`` or ``:`` in it reaches the server whole
    instead of being read as part of the host name (and quoted in the driver's error)."""
    for plain in ("postgresql://", "postgres://"):
        if url.startswith(plain):
            url = "postgresql+psycopg://" + url[len(plain):]
            break
    userinfo = _USERINFO.match(url)
    if userinfo and userinfo.group("password"):
        url = f"{userinfo.group('head')}:{quote(unquote(userinfo.group('password')), safe='')}@{url[userinfo.end():]}"
    return url


# scheme://user:password@ as ``redact_url`` finds it: the password runs to the last "@".
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^/:@\s]*):(?P<password>[^\s]*)@")


def _password(url: str) -> str | None:
    """The password of ``url`` as written (what ``redact_url`` hides), to scrub it from error texts too."""
    userinfo = _USERINFO.match(url)
    return userinfo.group("password") if userinfo and userinfo.group("password") else None


def storage_error(url: str, exc: BaseException) -> str:
    """One line about ``exc`` with no trace of ``url``'s password (drivers may quote the URL, even encoded)."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    text = redact_url(text)
    secret = _password(url)
    if secret:
        for form in {secret, unquote(secret), quote(unquote(secret), safe="")}:
            if form:
                text = text.replace(form, "***")
    return text[:300]


def make_storage(url: str) -> optuna.storages.BaseStorage:
    """Open ``--storage URL`` (or the run directory's SQLite file); any failure is one line naming --storage,
    never with the URL's password: a bad URL, a missing driver, a server that is down or refuses us."""
    kwargs: dict[str, Any] = {}
    sa_url = storage_url(url)
    if url.startswith("sqlite"):
        # One writer (this driver) but report/dashboard readers may hold the lock for a moment.
        kwargs["engine_kwargs"] = {"connect_args": {"timeout": 60}}
    elif sa_url.startswith("postgresql"):
        # A long search outlives server restarts and idle-connection reapers: check a connection before use.
        engine: dict[str, Any] = {"pool_pre_ping": True}
        if "connect_timeout" not in url:
            engine["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT_S}
        kwargs["engine_kwargs"] = engine
    shown = redact_url(url)
    for attempt in range(3):
        try:
            storage = optuna.storages.RDBStorage(sa_url, **kwargs)
        except ImportError as exc:  # optuna wraps the driver's ImportError
            missing = getattr(exc.__cause__, "name", None) or storage_error(url, exc.__cause__ or exc)
            hint = "pip install recipesearch[postgres]" if missing == "psycopg" else "install it"
            if missing != "psycopg" and sa_url.startswith("postgres"):
                hint += ", or use a plain postgresql:// URL (psycopg 3: pip install recipesearch[postgres])"
            raise UserError(f"--storage: {shown} needs the database driver {missing!r}, which is not installed: "
                            f"{hint}") from None
        except Exception as exc:  # noqa: BLE001 - bad URL, unreachable server, bad password: one line
            if attempt < 2 and _creating_tables(exc):
                time.sleep(0.5 + attempt)  # another search is creating Optuna's tables in this database now
                continue
            raise UserError(f"--storage: cannot open {shown}: {storage_error(url, exc)}") from None
        interrupts.hold_during_transactions(storage.engine)  # Ctrl-C never lands mid-transaction
        return storage
    raise AssertionError("unreachable")


def _creating_tables(exc: Exception) -> bool:
    """Two searches opening one new database at once both create Optuna's tables: the loser's error."""
    text = str(exc).lower()
    return "already exists" in text or "duplicate key" in text or "unique constraint" in text


class StudyLock:
    """Held by the one search that drives a study in a PostgreSQL ``--storage``: a session advisory lock
    on a connection of its own, which the server lets go when this process ends (a kill -9 included)."""

    def __init__(self, engine: Any, key: int):
        import sqlalchemy

        self._engine = engine  # no pool: closing the connection ends the session, and the lock with it
        self._conn: Any = engine.connect()
        try:
            query = sqlalchemy.text("SELECT pg_try_advisory_lock(:key)")
            self.held = bool(self._conn.execute(query, {"key": key}).scalar())
            self._conn.commit()
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        conn, self._conn = self._conn, None
        try:
            if conn is not None:
                conn.close()
        finally:
            self._engine.dispose()


def lock_study(storage: optuna.storages.BaseStorage, name: str, url: str) -> StudyLock | None:
    """Take the study ``name``'s lock, or refuse in one line: two searches on one study would requeue each
    other's running trials as interrupted and both run its budget. PostgreSQL: a session advisory lock; an
    SQLite file: a lock file beside it (``runlock``); None for other storages."""
    engine = getattr(storage, "engine", None)
    if engine is not None and engine.dialect.name == "sqlite" and engine.url.database not in (None, "", ":memory:"):
        from recipesearch.runlock import sqlite_study_lock

        return sqlite_study_lock(engine.url.database, name).acquire()
    if engine is None or engine.dialect.name != "postgresql":
        return None
    import hashlib

    import sqlalchemy

    key = int.from_bytes(hashlib.blake2b(f"recipesearch study {name}".encode(), digest_size=8).digest(),
                         "big", signed=True)
    connect_args = dict(getattr(storage, "engine_kwargs", {}).get("connect_args", {}))
    try:
        lock = StudyLock(sqlalchemy.create_engine(engine.url, poolclass=sqlalchemy.pool.NullPool,
                                                  connect_args=connect_args), key)
    except Exception as exc:  # noqa: BLE001 - the server went away since make_storage
        raise UserError(f"--storage: cannot open {redact_url(url)}: {storage_error(url, exc)}") from None
    if not lock.held:
        lock.release()
        raise UserError(f"--storage: another search is running the study {name!r} in {redact_url(url)} right now; "
                        "one search drives a study at a time (wait for it, or rename the space)")
    return lock


def open_study(space: SearchSpace, storage: optuna.storages.BaseStorage, sampler: Any,
               resuming: bool, force: bool = False, owner: str | None = None) -> optuna.Study:
    """Create the study (fresh run) or load it (resume), checking its directions against the space.

    A fresh run finding a study of the same name (a shared --storage) refuses, unless ``force``: then
    that study is deleted, as --force deletes the run directory, but only when it belongs to this run
    directory (``owner``, kept as the study's user attr ``OWNER``): --force never deletes another run's
    study. Replay passes an ``InMemoryStorage``.
    """
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if space.name in optuna.get_all_study_names(storage=storage) and not resuming:
        other = optuna.load_study(study_name=space.name, storage=storage).user_attrs.get(OWNER)
        if not force and owner is not None and other is not None and other != owner:
            raise UserError(f"--storage already has a study named {space.name!r}, the search in the run directory "
                            f"{other}; continue it with --resume --out {other}, or rename the space")
        if not force:
            raise UserError(f"--storage already has a study named {space.name!r}; pass --resume to continue "
                            "it, --force to delete it, or rename the space")
        if owner is not None and other is not None and other != owner:
            raise UserError(f"--force: the study {space.name!r} in --storage belongs to the run directory {other}, "
                            "not to this one; not deleting it (rename the space, or --force from that directory)")
        optuna.delete_study(study_name=space.name, storage=storage)
    if not isinstance(sampler, HideRepeats):
        sampler = HideRepeats(sampler, sampler_sees, seed=space.sampler.seed)
    try:
        # A fresh run creates its study or refuses: one that appeared since the check above is another
        # search's, started at the same moment, and must not be driven by two searches at once.
        study = optuna.create_study(storage=storage, study_name=space.name, sampler=sampler,
                                    directions=list(space.directions), load_if_exists=resuming)
    except optuna.exceptions.DuplicatedStudyError:
        raise UserError(f"--storage: another search created a study named {space.name!r} at the same moment; "
                        "not sharing it (one search drives a study at a time: rename the space)") from None
    except Exception as exc:  # noqa: BLE001 - e.g. two searches creating the same study at once
        raise UserError(f"--storage: cannot create the study {space.name!r}: {str(exc).splitlines()[0][:200]} "
                        "(is another search starting with the same space and storage?)") from None
    if owner is not None and OWNER not in study.user_attrs:
        study.set_user_attr(OWNER, owner)
    found = [d.name.lower() for d in study.directions]
    if found != list(space.directions):
        raise UserError(f"study {space.name!r} has directions {found}, the space {list(space.directions)}")
    if study.metric_names is None:  # a resumed study keeps the names it was created with
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(metric_names(space))  # what optuna.load_study and optuna-dashboard show
    return study


def metric_names(space: SearchSpace) -> list[str]:
    """The study's objective names: the space's objectives with ``accuracy`` named by the column selected on, so a
    search on validation shows ``val_accuracy`` (the value it told Optuna), not a test accuracy it never used."""
    return [space.selection_column if o == ACCURACY else o for o in space.objectives]
