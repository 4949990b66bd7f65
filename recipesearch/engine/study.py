"""The Optuna study of a search, through Optuna's public API only: open it, read trials, requeue, tabulate.

The study is the single source of truth: every measured number, the trained recipe and the error text
are trial ``user_attrs``, so trials.csv is a pure function of the study (``trials_frame``) and
``optuna.load_study`` (or optuna-dashboard) sees exactly what the report sees.

Interrupted trials: a trial whose driver went away before it finished is told FAIL with
``error="interrupted"`` and its parameters are enqueued again, so the sampler keeps every completed trial
in its history and the interrupted recipe runs once more. Interrupted failures do not count towards the
trial budget (``count_finished``).

Params of a queued trial: Optuna keeps an enqueued trial's parameters internally until it is asked, so
whatever we enqueue also carries its params as the user attr ``QUEUED_PARAMS``: trials.csv, the sweep and
resume read them from there.
"""
from __future__ import annotations

import json
import re
import time
import warnings
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

import optuna
from optuna.trial import FrozenTrial, TrialState

from recipesearch.engine import interrupts
from recipesearch.engine.sampler_view import HideRepeats
from recipesearch.errors import UserError
from recipesearch.rundir import HEAD_COLUMNS, TAIL_COLUMNS, redact_url
from recipesearch.space import params_key

if TYPE_CHECKING:
    import pandas as pd

    from recipesearch.space import SearchSpace

INTERRUPTED = "interrupted"  # error text of a trial whose driver went away before it finished
QUEUED_PARAMS = "queued_params"  # user attr: the params an enqueued trial was queued with
OWNER = "run_dir"  # study user attr: the run directory that created the study
# Stages of a search, in the order they run (user attr ``stage``): the LR sweep of the base recipe
# (baseline.tune_lr), the baseline runs (every budget x seeds), the proposals (sampled or swept), the
# confirmation re-runs of the best proposals (extra seeds, every budget; user attr ``of_trial``).
TUNE, BASELINE, SEARCH, CONFIRM, SIMPLIFY = "tune", "baseline", "search", "confirm", "simplify"
REPLICATE = "replicate"  # ``recipesearch replicate``'s runs, in a study of their own (engine/replicate.py)
STAGE, SEED_INDEX, OF_TRIAL = "stage", "seed_index", "of_trial"
# What an enqueued trial carries into its re-run when it is interrupted.
# A trial whose worker died on every attempt Tune allowed (node lost, killed for memory), and how many
# times Tune started a trial again after its worker died.
WORKER_LOST, RETRIES, REQUEUED_FROM = "worker_lost", "retries", "requeued_from"
# The scheduler's (engine/loop.py, analysis/rungs.py): [[fraction, accuracy, train_seconds], ...] a trial
# reported at its rungs; the rung where it was stopped (PRUNED) and why; the trial a promotion came from.
RUNGS, PRUNED_AT, PRUNE_REASON, PROMOTED_FROM = "rungs", "pruned_at", "prune_reason", "promoted_from"
# a proposal of a recipe the search has already trained or is training (the same recipe id: the same params,
# budget and seed), answered without training: PRUNED, with the number of the trial that trains it
DUPLICATE_OF = "duplicate_of"
# What a re-run inherits: its stage and seed, and the worker deaths its run already had (``RETRIES``: each
# death of the run's worker so far, the one that ended a FAIL included).
CARRIED_ATTRS = ("is_baseline", STAGE, SEED_INDEX, OF_TRIAL, RETRIES, PROMOTED_FROM, "arm")  # arm: a replication's


# 1) opening -----------------------------------------------------------------------------------------


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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names(list(space.objectives))  # column names in optuna-dashboard
    return study


# 2) reading trials ----------------------------------------------------------------------------------


def queued_params(t: FrozenTrial) -> dict[str, Any]:
    """The params a trial was enqueued with ({} for a sampled trial)."""
    # Studies written before QUEUED_PARAMS existed: Optuna's record of an enqueued trial's params.
    return dict(t.user_attrs.get(QUEUED_PARAMS) or t.system_attrs.get("fixed_params") or {})


def trial_params(t: FrozenTrial) -> dict[str, Any]:
    """Params of any trial: sampled ones, or those it was queued with while it waits."""
    return dict(t.params) if t.params else queued_params(t)


def is_interrupted(t: FrozenTrial) -> bool:
    return t.state == TrialState.FAIL and t.user_attrs.get("error") == INTERRUPTED


def stage_of(t: FrozenTrial | optuna.Trial) -> str:
    """The trial's stage; trials of studies written before stages existed: baseline or search."""
    stage = t.user_attrs.get(STAGE)
    if stage in (TUNE, BASELINE, SEARCH, CONFIRM, SIMPLIFY, REPLICATE):
        return stage
    return BASELINE if t.user_attrs.get("is_baseline") else SEARCH


def seed_index(t: FrozenTrial | optuna.Trial) -> int:
    """0 for a recipe's first run; k for its k-th repeat (recipe seed = space seed + k)."""
    return int(t.user_attrs.get(SEED_INDEX) or 0)


def run_key(params: dict[str, Any], seed: int) -> str:
    """One training run: the params and the seed index (the same recipe at another seed is another run)."""
    return f"{params_key(params)}#{int(seed)}"


def present_runs(trials: Sequence[FrozenTrial], stages: Sequence[str] | None = None) -> set[str]:
    """``run_key`` of every trial in ``stages`` (all by default) that ran, runs or waits: interrupted ones
    are left out because their re-queued copy stands for them."""
    return {run_key(trial_params(t), seed_index(t)) for t in trials
            if not is_interrupted(t) and (stages is None or stage_of(t) in stages)}


def sampler_sees(t: FrozenTrial) -> bool:
    """One run per recipe: the first seed of every stage but confirmation and simplify, which re-train what
    the sampler already chose (engine/sampler_view.py)."""
    return stage_of(t) not in (CONFIRM, SIMPLIFY) and seed_index(t) == 0


def is_finished(t: FrozenTrial) -> bool:
    return t.state in (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED) and not is_interrupted(t)


def rerun_elsewhere(trials: Sequence[FrozenTrial]) -> set[int]:
    """Numbers of trials another trial was queued to run again (interrupted, or their worker lost)."""
    return {int(t.user_attrs[REQUEUED_FROM]) for t in trials if t.user_attrs.get(REQUEUED_FROM) is not None}


def count_finished(trials: Sequence[FrozenTrial], stages: Sequence[str] | None = None) -> int:
    """Trials that count towards a budget: COMPLETE or FAIL for a reason of their own (in ``stages``). A lost
    worker's FAIL stops counting once ``--resume`` queued it again: its re-run stands for it."""
    rerun = rerun_elsewhere(trials)
    return sum(1 for t in trials if is_finished(t) and (stages is None or stage_of(t) in stages)
               and not (t.state == TrialState.FAIL and t.number in rerun))


def count_unfinished(trials: Sequence[FrozenTrial], stages: Sequence[str]) -> int:
    """Trials of ``stages`` still queued or running: what a stage has left to do."""
    return sum(1 for t in trials if stage_of(t) in stages and t.state in (TrialState.WAITING, TrialState.RUNNING))


def count_finished_rows(df: pd.DataFrame) -> int:
    """``count_finished`` on a trials.csv table."""
    if df.empty:
        return 0
    import pandas as pd

    finished = df["state"].isin(["COMPLETE", "FAIL", "PRUNED"]) & (df["error"] != INTERRUPTED)
    if REQUEUED_FROM in df:
        rerun = pd.to_numeric(df[REQUEUED_FROM], errors="coerce").dropna().astype(int)
        finished &= ~((df["state"] == "FAIL") & pd.to_numeric(df["number"], errors="coerce").isin(rerun))
    return int(finished.sum())


def count_in_state(trials: Sequence[FrozenTrial], state: TrialState) -> int:
    return sum(1 for t in trials if t.state == state)


def objective_accuracy(attrs: dict[str, Any], space: SearchSpace) -> float | None:
    value = attrs.get("val_accuracy" if space.metric_split == "val" else "accuracy")
    return float(value) if value is not None else None


def sweep_history(trials: Sequence[FrozenTrial], space: SearchSpace) -> list[dict[str, Any]]:
    """``SweepStrategy.propose`` input: one dict per trial (in-flight ones included, interrupted ones not)."""
    out = []
    for t in trials:
        if is_interrupted(t):
            continue  # its requeued copy stands for it
        done = t.state == TrialState.COMPLETE
        out.append({"params": trial_params(t), "state": t.state.name,
                    "accuracy": objective_accuracy(t.user_attrs, space),
                    "train_seconds": t.user_attrs.get("train_seconds") if done else None})
    return out


# 3) queueing ----------------------------------------------------------------------------------------


def enqueue(study: optuna.Study, params: dict[str, Any], **attrs: Any) -> None:
    study.enqueue_trial(params, user_attrs={QUEUED_PARAMS: dict(params), **attrs})


def enqueue_missing(study: optuna.Study, runs: Sequence[tuple[dict[str, Any], int]], stages: Sequence[str],
                    **attrs: Any) -> int:
    """Enqueue each (params, seed index) that no trial of ``stages`` holds yet. Returns how many: 0 on a
    resume that already queued them, which is what makes every stage resumable."""
    present = present_runs(study.get_trials(deepcopy=False), stages)
    added = 0
    for params, seed in runs:
        key = run_key(params, seed)
        if key not in present:
            present.add(key)
            enqueue(study, params, **attrs, **{SEED_INDEX: int(seed)})
            added += 1
    return added


def ensure_lr_sweep(study: optuna.Study, space: SearchSpace) -> int:
    """Enqueue the LR sweep of the base recipe (``baseline.tune_lr``) where it is missing."""
    return enqueue_missing(study, [(p, 0) for p in space.lr_sweep()], [TUNE], stage=TUNE, is_baseline=False)


def tuned_lr(trials: Sequence[FrozenTrial], space: SearchSpace) -> tuple[bool, Any]:
    """(decided, LR parameter for the baseline). Not decided while a sweep run waits or runs; decided
    as the base LR (None) when the space does not tune or no sweep run completed. Ties keep the lower LR."""
    if not space.baseline.tune_lr:
        return True, None
    sweep = [t for t in trials if stage_of(t) == TUNE and not is_interrupted(t)]
    if len(sweep) < len(space.lr_sweep()) or any(not is_finished(t) for t in sweep):
        return False, None
    done = [(objective_accuracy(t.user_attrs, space), t) for t in sweep if t.state == TrialState.COMPLETE]
    done = [(acc, t) for acc, t in done if acc is not None]
    if not done:
        return True, None
    best = max(done, key=lambda pair: (pair[0], -float(trial_params(pair[1]).get("optimizer.lr", 0))))
    return True, trial_params(best[1]).get("optimizer.lr")


def ensure_baselines(study: optuna.Study, space: SearchSpace, lr: Any = None) -> int:
    """Enqueue the base recipe (at LR parameter ``lr``; None: the base LR) at every budget and seed index
    that has no baseline trial yet (any state). Returns how many."""
    runs = [(params, s) for params in space.baselines(lr) for s in range(space.baseline.seeds)]
    # The LR sweep's run at the chosen LR is already the baseline's first seed at that budget.
    return enqueue_missing(study, runs, [TUNE, BASELINE], stage=BASELINE, is_baseline=True)


def requeue(study: optuna.Study, t: FrozenTrial) -> bool:
    """Queue ``t``'s run again (its full params, ``REQUEUED_FROM`` and the ``CARRIED_ATTRS``): the one way an
    interrupted or lost trial runs once more. False when it has nothing to re-run (``rerun_params``)."""
    params = rerun_params(t)
    if params:
        enqueue(study, params, **{REQUEUED_FROM: t.number},
                **{k: t.user_attrs[k] for k in CARRIED_ATTRS if k in t.user_attrs})
    return bool(params)


def rerun_params(t: FrozenTrial) -> dict[str, Any]:
    """What to run again for an interrupted trial: all of its params, or nothing.

    An enqueued trial (baseline, sweep move, earlier re-run) keeps its full params. A sampled one is
    complete once the loop stored its recipe attrs (``algorithms``); a driver killed in the middle of
    drawing params leaves a partial set that never reached a worker: nothing to re-run.
    """
    return queued_params(t) or (dict(t.params) if "algorithms" in t.user_attrs else {})


def rerun_chain(trials: Sequence[FrozenTrial], number: int | None) -> list[int]:
    """The trial ``number`` and the trials it re-ran in turn (``REQUEUED_FROM``), latest first: a re-run's
    checkpoints are more advanced than its predecessor's."""
    by_number = {t.number: t for t in trials}
    chain: list[int] = []
    while number is not None and int(number) not in chain:
        chain.append(int(number))
        number = by_number[int(number)].user_attrs.get(REQUEUED_FROM) if int(number) in by_number else None
    return chain


def recover_interrupted(study: optuna.Study, storage: optuna.storages.BaseStorage) -> int:
    """Mark the RUNNING trials a killed driver left behind as interrupted and enqueue them again.

    Assumes no other driver runs this study at the same time (a shared --storage included). The error
    text goes through the storage's public ``set_trial_user_attr``: no ``optuna.Trial`` exists for a
    trial this process did not ask.
    """
    stale = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.RUNNING]
    study_id = storage.get_study_id_from_name(study.study_name) if stale else None
    for t in stale:
        trial_id = storage.get_trial_id_from_study_id_trial_number(study_id, t.number)
        storage.set_trial_user_attr(trial_id, "error", INTERRUPTED)
        study.tell(t.number, state=TrialState.FAIL)
        requeue(study, t)
    return len(stale)


def requeue_lost_workers(study: optuna.Study) -> int:
    """``--resume``: queue again each trial whose worker died on every attempt (``WORKER_LOST``) and that no
    earlier resume queued yet. Its FAIL stays in the study (the record of what happened) and stops counting
    towards the budget (``count_finished``)."""
    trials = study.get_trials(deepcopy=False)
    rerun = rerun_elsewhere(trials)
    lost = [t for t in trials if t.state == TrialState.FAIL and t.user_attrs.get(WORKER_LOST)
            and t.number not in rerun]
    return sum(requeue(study, t) for t in lost)


# 4) trials.csv rows ---------------------------------------------------------------------------------


def _iso(dt: datetime | None) -> str:
    return dt.isoformat(sep=" ", timespec="seconds") if dt else ""


def trial_row(t: FrozenTrial, space: SearchSpace | None = None) -> dict[str, Any]:
    """One trials.csv row from one stored trial: params as ``params_<name>``, metrics from user_attrs."""
    a = t.user_attrs
    params = trial_params(t)
    row: dict[str, Any] = {"number": t.number, "state": t.state.name}
    is_base = a.get("is_baseline")
    if is_base is None and space is not None and params:
        is_base = space.is_baseline(params)
    row["is_baseline"] = bool(is_base)
    row["budget"] = a.get("budget", params.get("budget"))
    row["epochs"] = a.get("epochs")
    row["algorithms"] = a.get("algorithms", "")
    row.update({f"params_{k}": v for k, v in params.items()})
    for col in TAIL_COLUMNS:
        row[col] = a.get(col)
    row["datetime_start"] = _iso(t.datetime_start)
    row["datetime_complete"] = _iso(t.datetime_complete)
    row["error"] = a.get("error") or ""
    row["recipe_id"] = a.get("recipe_id") or ""
    row["recipe_json"] = a.get("recipe_json") or ""
    row["stage"] = stage_of(t)
    row["of_trial"] = a.get(OF_TRIAL)
    row[RUNGS] = json.dumps(a[RUNGS]) if a.get(RUNGS) else ""
    return row


def trials_frame(trials: Sequence[FrozenTrial], space: SearchSpace | None = None,
                 param_names: Sequence[str] | None = None) -> pd.DataFrame:
    """The trials.csv table: contract columns, ``params_<name>`` for every parameter, sorted by number."""
    import pandas as pd

    rows = [trial_row(t, space) for t in sorted(trials, key=lambda t: t.number)]
    names = set(param_names or ())
    for r in rows:
        names.update(k[len("params_"):] for k in r if k.startswith("params_"))
    columns = [*HEAD_COLUMNS, *(f"params_{n}" for n in sorted(names)), *TAIL_COLUMNS]
    return pd.DataFrame(rows, columns=columns)
