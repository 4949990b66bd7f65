"""What a search leaves on disk, and how it is picked up again: run directory, Optuna study, trials.csv.

A run directory holds::

    space.yaml    exact copy of the space file the search was started with
    study.db      Optuna RDB storage (SQLite) unless --storage names a database server
    run.json      command lines, library versions, hardware, start/end times, space hash, storage, Ray address
    trials.csv    one row per trial (docs/ARCHITECTURE.md "trials.csv contract"), rewritten atomically
    ray/          Ray Tune's own experiment folders (one per session), logs only

The study is the single source of truth: every measured number, the trained recipe and the error text
are trial ``user_attrs``, so ``trials.csv`` is a pure function of the study (``trials_frame``) and
``optuna.load_study`` (or optuna-dashboard) sees exactly what the report sees.

Resume (``recover_interrupted``): a driver killed with -9 leaves RUNNING trials behind. They are told
FAIL with ``error="interrupted"`` and their parameters are enqueued again, so the sampler's history keeps
every trial that completed and the interrupted recipes run once more. Interrupted failures do not count
towards the trial budget (``count_finished``).
"""
from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recipesearch.errors import UserError

if TYPE_CHECKING:
    import optuna
    import pandas as pd

    from recipesearch.space import SearchSpace

INTERRUPTED = "interrupted"  # error text of a trial whose driver went away before it finished

# trials.csv columns around the params_<name> block (docs/ARCHITECTURE.md, binding for the report).
HEAD_COLUMNS = ("number", "state", "is_baseline", "budget", "epochs", "algorithms")
TAIL_COLUMNS = ("accuracy", "val_accuracy", "loss", "train_seconds", "throughput", "data_wait_fraction", "cost",
                "recipe_id", "recipe_json", "error", "datetime_start", "datetime_complete", "seed")


@dataclass(frozen=True)
class RunDir:
    root: Path

    @property
    def space_yaml(self) -> Path:
        return self.root / "space.yaml"

    @property
    def study_db(self) -> Path:
        return self.root / "study.db"

    @property
    def run_json(self) -> Path:
        return self.root / "run.json"

    @property
    def trials_csv(self) -> Path:
        return self.root / "trials.csv"

    @property
    def ray_dir(self) -> Path:
        return self.root / "ray"

    def default_storage(self) -> str:
        return f"sqlite:///{self.study_db.resolve()}"


def write_atomic(path: Path, text: str) -> None:
    """Write next to ``path`` then rename over it: readers see the old file or the new one, never half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def check_run_dir(out: str | Path, space: SearchSpace, resume: bool, force: bool) -> bool:
    """Check ``out`` against the flags without writing anything; return True when resuming.

    A non-empty directory is only reused with ``--resume`` (same space) or wiped with ``--force``.
    """
    root = Path(out)
    if root.exists() and not root.is_dir():
        raise UserError(f"--out: {root} exists and is not a directory")
    non_empty = root.is_dir() and any(root.iterdir())
    if non_empty and not (resume or force):
        raise UserError(f"--out: {root} is not empty; pass --resume to continue that search or --force to "
                        "delete it and start again")
    run = RunDir(root)
    if non_empty and force and not resume and not any(p.exists() for p in (run.space_yaml, run.run_json)):
        # --force deletes the directory: only when it is a search's run directory, never a typo'd $HOME
        raise UserError(f"--force: {root} does not look like a search run directory (no space.yaml or "
                        "run.json); not deleting it")
    if not (resume and non_empty):
        return False
    if not run.space_yaml.is_file():
        raise UserError(f"--resume: {root} has no space.yaml; is it the --out directory of a search?")
    if run.space_yaml.read_text() != space.text:
        from recipesearch.space import loads_space

        old = loads_space(run.space_yaml.read_text(), source=str(run.space_yaml),
                          base_dir=space.path.parent if space.path else None)
        if old.hash != space.hash:
            raise UserError(f"--resume: the space differs from {run.space_yaml} (hash {old.hash} vs "
                            f"{space.hash}); resume with the same space or start again with --force")
    return True


def prepare_run_dir(out: str | Path, space: SearchSpace, resume: bool, force: bool) -> tuple[RunDir, bool]:
    """``check_run_dir``, then make the directory: wiped with --force, space.yaml written when fresh."""
    resuming = check_run_dir(out, space, resume, force)
    run = RunDir(Path(out))
    if not resuming and force and run.root.is_dir():
        shutil.rmtree(run.root)
    run.root.mkdir(parents=True, exist_ok=True)
    if not resuming:
        run.space_yaml.write_text(space.text)
    return run, resuming


# 1) study -------------------------------------------------------------------------------------------


def make_storage(url: str) -> optuna.storages.BaseStorage:
    import optuna

    kwargs: dict[str, Any] = {}
    if url.startswith("sqlite"):
        # One writer (this driver) but report/dashboard readers may hold the lock for a moment.
        kwargs["engine_kwargs"] = {"connect_args": {"timeout": 60}}
    try:
        return optuna.storages.RDBStorage(url, **kwargs)
    except Exception as exc:  # bad URL, missing driver, unreachable server: one line for the user
        raise UserError(f"--storage: cannot open {_redact(url)}: {str(exc).splitlines()[0]}") from None


def open_study(space: SearchSpace, storage: optuna.storages.BaseStorage, sampler: Any,
               resuming: bool, force: bool = False) -> optuna.Study:
    """Create the study (fresh run) or load it (resume), checking its directions against the space.

    A fresh run finding a study of the same name (a shared --storage) refuses, unless ``force``: then
    that study is deleted, as --force deletes the run directory.
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    names = {s.study_name for s in storage.get_all_studies()}
    if space.name in names and not resuming:
        if not force:
            raise UserError(f"--storage already has a study named {space.name!r}; pass --resume to continue "
                            "it, --force to delete it, or rename the space")
        optuna.delete_study(study_name=space.name, storage=storage)
    study = optuna.create_study(storage=storage, study_name=space.name, sampler=sampler,
                                directions=list(space.directions), load_if_exists=True)
    found = [d.name.lower() for d in study.directions]
    if found != list(space.directions):
        raise UserError(f"study {space.name!r} has directions {found}, the space {list(space.directions)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names(list(space.objectives))  # column names in optuna-dashboard
    return study


def _params(t: optuna.trial.FrozenTrial) -> dict[str, Any]:
    """Params of any trial; an enqueued (WAITING) trial only has them as ``fixed_params``."""
    return dict(t.params) if t.params else dict(t.system_attrs.get("fixed_params") or {})


def is_interrupted(t: optuna.trial.FrozenTrial) -> bool:
    return t.state.name == "FAIL" and t.user_attrs.get("error") == INTERRUPTED


def count_finished(trials: Sequence[optuna.trial.FrozenTrial]) -> int:
    """Trials that count towards the budget: COMPLETE or FAIL for a reason of their own."""
    return sum(1 for t in trials if t.state.name in ("COMPLETE", "FAIL") and not is_interrupted(t))


def count_finished_rows(df: pd.DataFrame) -> int:
    """``count_finished`` on a trials.csv table."""
    if df.empty:
        return 0
    return int((df["state"].isin(["COMPLETE", "FAIL"]) & (df["error"] != INTERRUPTED)).sum())


def count_waiting(trials: Sequence[optuna.trial.FrozenTrial]) -> int:
    return sum(1 for t in trials if t.state.name == "WAITING")


def mark_interrupted(study: optuna.Study, trial_id: int, number: int, params: dict[str, Any],
                     user_attrs: dict[str, Any]) -> None:
    """Tell one unfinished trial FAIL("interrupted") and enqueue its params again (if it had any)."""
    from optuna.trial import TrialState

    study._storage.set_trial_user_attr(trial_id, "error", INTERRUPTED)
    study.tell(number, state=TrialState.FAIL)
    if params:
        attrs = {"requeued_from": number}
        if "is_baseline" in user_attrs:
            attrs["is_baseline"] = user_attrs["is_baseline"]
        study.enqueue_trial(params, user_attrs=attrs)


def recover_interrupted(study: optuna.Study) -> int:
    """Mark the RUNNING trials a killed driver left behind as interrupted and re-enqueue them.

    Assumes no other driver is running this study at the same time (a shared --storage included).
    """
    stale = [t for t in study.get_trials(deepcopy=False) if t.state.name == "RUNNING"]
    for t in stale:
        # _trial_id: Optuna's storage key; the public Trial API cannot write to a trial it did not ask.
        mark_interrupted(study, t._trial_id, t.number, _rerun_params(t), dict(t.user_attrs))
    return len(stale)


def _rerun_params(t: optuna.trial.FrozenTrial) -> dict[str, Any]:
    """What to run again for an interrupted trial: all of its params, or nothing.

    An enqueued trial (baseline, sweep move, earlier re-run) keeps its full params in ``fixed_params``.
    A sampled one is complete once the runner stored its recipe attrs (``algorithms``); a driver killed
    in the middle of drawing params leaves a partial set that never reached a worker: nothing to re-run.
    """
    fixed = t.system_attrs.get("fixed_params")
    if fixed:
        return dict(fixed)
    return dict(t.params) if "algorithms" in t.user_attrs else {}


def ensure_baselines(study: optuna.Study, space: SearchSpace) -> int:
    """Enqueue the base recipe at every budget that has no baseline trial yet (any state). Returns how many."""
    from recipesearch.space import params_key

    present = {params_key(_params(t)) for t in study.get_trials(deepcopy=False) if not is_interrupted(t)}
    added = 0
    for params in space.baselines():
        if params_key(params) not in present:
            study.enqueue_trial(params, user_attrs={"is_baseline": True})
            added += 1
    return added


def sweep_history(trials: Sequence[optuna.trial.FrozenTrial], space: SearchSpace) -> list[dict[str, Any]]:
    """``SweepStrategy.propose`` input: one dict per trial (in-flight ones included, interrupted ones not)."""
    out = []
    for t in trials:
        if is_interrupted(t):
            continue  # its re-enqueued copy stands for it
        acc = _objective_accuracy(t.user_attrs, space)
        secs = t.user_attrs.get("train_seconds")
        out.append({"params": _params(t), "state": t.state.name, "accuracy": acc,
                    "train_seconds": secs if t.state.name == "COMPLETE" else None})
    return out


def _objective_accuracy(attrs: dict[str, Any], space: SearchSpace) -> float | None:
    key = "val_accuracy" if space.metric_split == "val" else "accuracy"
    value = attrs.get(key)
    return float(value) if value is not None else None


# 2) trials.csv --------------------------------------------------------------------------------------


def _iso(dt: datetime | None) -> str:
    return dt.isoformat(sep=" ", timespec="seconds") if dt else ""


def trial_row(t: optuna.trial.FrozenTrial, space: SearchSpace | None = None) -> dict[str, Any]:
    """One trials.csv row from one stored trial: params as ``params_<name>``, metrics from user_attrs."""
    a = t.user_attrs
    params = _params(t)
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
    return row


def trials_frame(trials: Sequence[optuna.trial.FrozenTrial], space: SearchSpace | None = None,
                 param_names: Sequence[str] | None = None) -> pd.DataFrame:
    """The trials.csv table: contract columns, ``params_<name>`` for every parameter, sorted by number."""
    import pandas as pd

    rows = [trial_row(t, space) for t in sorted(trials, key=lambda t: t.number)]
    names = set(param_names or ())
    for r in rows:
        names.update(k[len("params_"):] for k in r if k.startswith("params_"))
    columns = [*HEAD_COLUMNS, *(f"params_{n}" for n in sorted(names)), *TAIL_COLUMNS]
    return pd.DataFrame(rows, columns=columns)


def write_trials_csv(df: pd.DataFrame, path: Path) -> None:
    write_atomic(path, df.to_csv(index=False))


# 3) run.json ----------------------------------------------------------------------------------------


def now_iso() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


class RunInfo:
    """run.json: what ran, where and when. One entry in ``sessions`` per start or resume."""

    def __init__(self, run: RunDir, resuming: bool):
        self.path = run.run_json
        self.data: dict[str, Any] = {}
        if resuming and self.path.is_file():
            try:
                self.data = json.loads(self.path.read_text())
            except (OSError, json.JSONDecodeError):
                self.data = {}
        self.data.setdefault("sessions", [])

    def start(self, *, command: list[str], space: SearchSpace, storage: str, ray_address: str | None,
              n_trials: int, run_dir: Path) -> None:
        from recipesearch.env_info import hardware, library_versions

        started = now_iso()
        self.data.update({
            "command": command,
            "run_dir": str(run_dir.resolve()),
            "space_name": space.name,
            "space_hash": space.hash,
            "space_path": str(space.path) if space.path else None,
            "storage": _redact(storage),
            "ray_address": ray_address,
            "trials": n_trials,
            "objectives": list(space.objectives),
            "directions": list(space.directions),
            "metric_split": space.metric_split,
            "versions": library_versions(),
            "hardware": hardware(),
            "status": "running",
            "end_time": None,
        })
        self.data.setdefault("start_time", started)
        self.data["sessions"].append({"command": command, "start_time": started, "end_time": None,
                                      "ray_address": ray_address})
        self.save()

    def update(self, **fields: Any) -> None:
        self.data.update(fields)
        self.save()

    def finish(self, status: str, **fields: Any) -> None:
        end = now_iso()
        self.data.update(fields, status=status)
        self.data["sessions"][-1]["end_time"] = end
        self.data["sessions"][-1]["status"] = status
        if status == "finished":
            self.data["end_time"] = end
        self.save()

    def save(self) -> None:
        write_atomic(self.path, json.dumps(self.data, indent=2, default=str) + "\n")


def _redact(url: str) -> str:
    """A database URL without its password (run.json is shared with reports)."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url
