"""``RunDir``: the one owner of a search's run directory — its paths, atomic writes, run.json and trials.csv.

A run directory holds::

    space.yaml    exact copy of the space file the search was started with
    study.db      Optuna RDB storage (SQLite) unless --storage names a database server
    run.json      command lines, library versions, hardware, start/end times, space hash, storage, Ray address
    trials.csv    one row per trial (the contract below), rewritten atomically after every finished trial
    ray/          Ray Tune's own experiment folders (one per session), logs only
    pareto.csv, recipes/, plots/, index.html    what the report writes

trials.csv contract (search -> report, docs/ARCHITECTURE.md): ``HEAD_COLUMNS``, then ``params_<name>`` for
every sampled parameter, then ``TAIL_COLUMNS``. ``write_trials`` and ``read_trials`` are the pair that
writes and reads it; nothing else opens the file.

Every write goes through ``write_atomic``: a temporary file next to the target, then ``os.replace``
(atomic on one file system), so a browser or a report reading while the search writes sees the old file
or the new one, never half of either. The temporary name carries process and thread ids, so two writers
(the search and a concurrent ``recipesearch report``) never share one.
"""
from __future__ import annotations

import io
import json
import math
import os
import re
import shutil
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recipesearch.errors import UserError
from recipesearch.runcheck import (
    check_space_text,
    check_study_db,
    check_trials_text,
    output_problem,
    parse_meta,
    read_text,
)
from recipesearch.runlock import LOCK_NAME

# HEAD_COLUMNS and TAIL_COLUMNS stay importable from here too: the contract this module's docstring names
from recipesearch.trials_columns import HEAD_COLUMNS as HEAD_COLUMNS
from recipesearch.trials_columns import NUMERIC_COLUMNS, STAGES, TEXT_COLUMNS
from recipesearch.trials_columns import TAIL_COLUMNS as TAIL_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

    from recipesearch.space import SearchSpace

def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    finally:
        if tmp.exists():  # only when the write or the rename failed
            tmp.unlink()
    return path


def now_iso() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


@dataclass(frozen=True)
class RunDir:
    root: Path

    def __init__(self, root: str | Path):
        object.__setattr__(self, "root", Path(root))

    # -- paths
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

    # -- opening for a search: every refusal comes before anything is written
    def check(self, space: SearchSpace, resume: bool, force: bool, made_now: bool = False) -> bool:
        """Check the directory against the flags without writing anything; True when resuming.

        A non-empty directory is only reused with ``--resume`` (same space) or wiped with ``--force``.
        ``made_now``: the driver made the folder a moment ago (to lock it), after ``check`` found none: what
        is in it since is a watcher's (optuna-dashboard or a script opening study.db), not a search's.
        """
        root = self.root
        check_out_dir(root)
        non_empty = (root.is_dir() and not made_now
                     and any(p.name != LOCK_NAME for p in root.iterdir()))  # the driver's own lock left out
        if resume and not non_empty:  # a typo'd --out, or a search that never started: nothing to continue
            state = "is empty" if root.is_dir() else "does not exist"
            raise UserError(f"--resume: {root} {state}: there is no search to continue; start it without --resume")
        if non_empty and not (resume or force):
            raise UserError(f"--out: {root} is not empty; pass --resume to continue that search or --force to "
                            "delete it and start again")
        if non_empty and force and not resume and not any(p.exists() for p in (self.space_yaml, self.run_json)):
            # --force deletes the directory: only when it is a search's run directory, never a typo'd $HOME
            raise UserError(f"--force: {root} does not look like a search run directory (no space.yaml or "
                            "run.json); not deleting it")
        if not (resume and non_empty):
            return False
        if not os.path.lexists(self.space_yaml):
            raise UserError(f"--resume: {root} has no space.yaml ({self.space_yaml} not found); is it the --out "
                            "directory of a search?")
        text = read_text(self.space_yaml, "YAML text")
        if text != space.text:
            # Same content written differently (comments, order) is the same search: compare hashes.
            from recipesearch.space import loads_space  # only a resume of an edited file needs the parser

            old = loads_space(text, source=str(self.space_yaml), base_dir=space.path.parent if space.path else None)
            if old.hash != space.hash:
                raise UserError(f"--resume: the space differs from {self.space_yaml} (hash {old.hash} vs "
                                f"{space.hash}); resume with the same space or start again with --force")
        self.read_meta(strict=True)  # the sessions so far, which the resume appends to
        self.check_outputs(self._search_outputs(), ["recipes", "plots", "ray"])
        return True

    def check_study(self, space: SearchSpace, storage: str | None) -> None:
        """--resume with the run directory's own study (no --storage): study.db must hold this space's study,
        or the resume would start an empty one in its place. Read-only, without Optuna; after ``check``."""
        recorded = str(self.read_meta().get("storage") or "")
        if storage or (recorded and not recorded.startswith("sqlite")):
            return  # the study is elsewhere (the driver checks that --storage is given again)
        if os.path.lexists(self.study_db):
            check_study_db(self.study_db, space.name, space.directions)
        elif any(os.path.lexists(p) for p in (self.trials_csv, self.run_json)):
            raise UserError(f"{self.study_db}: not found; it holds every trial of the search, so --resume cannot "
                            "continue without it (start again with --force)")

    def _search_outputs(self) -> list[str]:
        """What a search (re)writes in its directory: its tables and log, and the report's files."""
        names = ["trials.csv", "run.json", "report.log", "pareto.csv", "index.html"]
        for folder, suffixes in (("recipes", (".yaml",)), ("plots", (".svg", ".png"))):
            if (self.root / folder).is_dir():
                names += [f"{folder}/{p.name}" for p in sorted((self.root / folder).iterdir()) if p.suffix in suffixes]
        return names

    def check_outputs(self, files: Iterable[str] = (), folders: Iterable[str] = ()) -> None:
        """Refuse, before anything is written, an output path (relative to the run directory) that a write
        could not replace: a directory where a file goes, anything else where a folder goes."""
        for name, folder in [*((f, True) for f in folders), *((f, False) for f in files)]:
            problem = output_problem(self.root / name, folder)
            if problem:
                raise UserError(f"{self.root / name}: {problem}")

    def prepare(self, space: SearchSpace, resume: bool, force: bool, made_now: bool = False) -> bool:
        """``check``, then make the directory: wiped with --force, space.yaml written when fresh."""
        resuming = self.check(space, resume, force, made_now)
        if not resuming and force and self.root.is_dir():
            for child in self.root.iterdir():  # all but the lock this driver holds (deleting it would free it)
                if child.name == LOCK_NAME:
                    continue
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"--out: cannot create {self.root}: {exc.strerror or exc}") from None
        if not resuming:
            write_atomic(self.space_yaml, space.text)
        return resuming

    # -- trials.csv: the writer and the reader
    def write_trials(self, df: pd.DataFrame) -> None:
        write_atomic(self.trials_csv, df.to_csv(index=False))

    def read_trials(self, required: Iterable[str] = ()) -> pd.DataFrame:
        """trials.csv with every contract column present in a usable dtype, sorted by trial number.

        A damaged file (not text, a missing column, a short row, a value that does not parse) is a one-line
        UserError naming its line and column (runcheck.check_trials_text); ``required``: columns needed on
        top of runcheck.REQUIRED_COLUMNS (the metric the search selected on)."""
        import pandas as pd

        if not self.root.is_dir():
            raise UserError(f"{self.root}: not a directory" if os.path.lexists(self.root)
                            else f"{self.root}: no such run directory")
        if not os.path.lexists(self.trials_csv):
            raise UserError(f"{self.root}: no trials.csv ({self.trials_csv} not found); is this the --out directory "
                            "of a recipesearch search?")
        text = read_text(self.trials_csv, "a readable CSV file")
        check_trials_text(self.trials_csv, text, tuple(required))
        try:
            raw = pd.read_csv(io.StringIO(text), keep_default_na=True)
        except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
            raise UserError(f"{self.trials_csv}: not a readable CSV file ({str(exc).splitlines()[0]})") from None
        return normalise_trials(raw)

    # -- run.json and space.yaml
    def read_meta(self, strict: bool = False) -> dict[str, Any]:
        """run.json as a dict; {} when missing. Damaged: {} as well, unless ``strict`` (report, export,
        --resume), where it is a one-line UserError naming the file and the field (runcheck.parse_meta)."""
        if strict:
            return parse_meta(self.run_json, read_text(self.run_json, "JSON")) if os.path.lexists(self.run_json) \
                else {}
        try:
            loaded = json.loads(self.run_json.read_text())
        except (OSError, json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            return {}
        return loaded if isinstance(loaded, dict) else {}

    def read_space_text(self, strict: bool = False) -> str:
        """space.yaml's text; "" when missing. ``strict``: damage is a one-line error (it must be YAML text
        holding a mapping, runcheck.check_space_text); else undecodable bytes are replaced."""
        if not strict:
            return self.space_yaml.read_text(errors="replace") if self.space_yaml.is_file() else ""
        if not os.path.lexists(self.space_yaml):
            return ""
        text = read_text(self.space_yaml, "YAML text")
        check_space_text(self.space_yaml, text)
        return text


def _as_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "t", "y")
    try:
        return bool(value) and not (isinstance(value, float) and math.isnan(value))
    except (TypeError, ValueError):
        return False


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def normalise_trials(df: pd.DataFrame) -> pd.DataFrame:
    """Every contract column present with a usable dtype, rows sorted by trial number (CSV or hand-made)."""
    import numpy as np
    import pandas as pd

    df = df.copy()
    if "number" not in df:
        df["number"] = np.arange(len(df))
    df["number"] = pd.to_numeric(df["number"], errors="coerce")
    df = df[df["number"].notna()].copy()
    df["number"] = df["number"].astype(int)
    for col in NUMERIC_COLUMNS:
        df[col] = pd.to_numeric(df[col], errors="coerce").astype(float) if col in df else np.nan
    for col in TEXT_COLUMNS:
        df[col] = df[col].map(_text) if col in df else ""
    if "state" in df and (df["state"] == "").all() and len(df):
        df["state"] = "COMPLETE"
    df["state"] = df["state"].str.upper().replace("", "UNKNOWN")
    df["algorithms"] = df["algorithms"].map(lambda s: "+".join(sorted(a.strip() for a in s.split("+") if a.strip())))
    df["is_baseline"] = df["is_baseline"].map(_as_bool).astype(bool) if "is_baseline" in df else False
    # Tables written before stages existed: a baseline row is the baseline stage, the rest proposals.
    unknown = ~df["stage"].isin(STAGES)
    df.loc[unknown, "stage"] = np.where(df.loc[unknown, "is_baseline"], "baseline", "search")
    return df.sort_values("number", kind="stable").reset_index(drop=True)


class RunLog:
    """run.json: what ran, where and when. One entry in ``sessions`` per start or resume."""

    def __init__(self, run: RunDir, resuming: bool):
        self.path = run.run_json
        self.data: dict[str, Any] = run.read_meta() if resuming else {}
        self.data.setdefault("sessions", [])

    def start(self, *, command: list[str], space: SearchSpace, storage: str, ray_address: str | None,
              n_trials: int, run_dir: Path, executor: str) -> None:
        from recipesearch.env_info import hardware, library_versions

        started = now_iso()
        self.data.update({
            "command": redact_command(command),
            "run_dir": str(run_dir.resolve()),
            "space_name": space.name,
            "space_hash": space.hash,
            "space_path": str(space.path) if space.path else None,
            "storage": redact_url(storage),
            "ray_address": ray_address,
            "executor": executor,
            "trials": n_trials,
            "objectives": list(space.objectives),
            "directions": list(space.directions),
            "metric_split": space.metric_split,
            "target": space.target,
            "versions": library_versions(),
            "hardware": hardware(),
            "status": "running",
            "end_time": None,
        })
        self.data.setdefault("start_time", started)
        self.data["sessions"].append({"command": redact_command(command), "start_time": started, "end_time": None,
                                      "ray_address": ray_address, "executor": executor})
        self.save()

    def update(self, **fields: Any) -> None:
        self.data.update(fields)
        self.save()

    def finish(self, status: str, **fields: Any) -> None:
        end = now_iso()
        self.data.update(fields, status=status)
        if self.data["sessions"]:
            self.data["sessions"][-1]["end_time"] = end
            self.data["sessions"][-1]["status"] = status
        if status == "finished":
            self.data["end_time"] = end
        self.save()

    def save(self) -> None:
        write_atomic(self.path, json.dumps(self.data, indent=2, default=str) + "\n")


# scheme://user:password@host... : the password is what sits between the first ":" after "//" and the last "@".
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^/:@\s]*):(?P<password>[^\s]*)@")


def check_out_dir(path: Path, flag: str = "--out") -> None:
    """Refuse, before any work, an output directory that cannot be created or written: an existing file,
    or a path whose nearest existing ancestor is not a writable directory (``/proc/x``, a read-only mount)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UserError(f"{flag}: {path} exists and is not a directory")
    ancestor = next((p for p in (path, *path.parents) if p.exists()), None)
    if ancestor is None or not ancestor.is_dir() or not os.access(ancestor, os.W_OK | os.X_OK) \
            or Path("/proc") in (ancestor, *ancestor.parents) or Path("/sys") in (ancestor, *ancestor.parents):
        raise UserError(f"{flag}: cannot create {path}: {ancestor} is not a writable directory")


def redact_url(url: str) -> str:
    """A database URL without its password (run.json is shared with reports, logs and error messages).

    By pattern, not by parsing: whatever sits between ``scheme://user:`` and the last ``@`` goes, so a
    URL no parser accepts (an unencoded ``@`` in the password) is never shown with its password."""
    return _USERINFO.sub(lambda m: f"{m.group('head')}:***@", url)


def redact_command(argv: list[str]) -> list[str]:
    """A command line with every URL's password redacted (``--storage URL`` and ``--storage=URL`` alike)."""
    return [redact_url(a) if "://" in a else a for a in argv]
