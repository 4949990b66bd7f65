"""Checks of a run directory's stored files, before ``report``, ``export`` or ``search --resume`` trusts them.

A run directory outlives the search that wrote it: files get deleted, truncated, overwritten, replaced by
a folder or a broken link. Each check here turns such damage into one ``UserError`` line naming the file
(``path:line: field: problem`` where there is one) before anything is written or started, instead of a
traceback, a report silently computed from defaults, or a resume that starts an empty study over the old
one. ``RunDir`` (rundir.py) calls them; nothing here writes, and study.db is opened read-only.
"""
from __future__ import annotations

import csv
import errno
import io
import json
import math
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from recipesearch.errors import UserError
from recipesearch.trials_columns import NUMERIC_COLUMNS, STAGES

# Columns without which trials.csv tells a report nothing (the whole contract: rundir.py's docstring).
REQUIRED_COLUMNS = ("number", "state", "is_baseline", "budget", "algorithms", "accuracy", "train_seconds")
TRIAL_STATES = ("COMPLETE", "FAIL", "RUNNING", "WAITING", "PRUNED")  # optuna.trial.TrialState names
_MISSING = {"", "na", "n/a", "nan", "-nan", "null", "none", "<na>", "#n/a"}  # what pandas reads as missing
_BOOLS = {"", "true", "false", "1", "0", "1.0", "0.0", "yes", "no", "t", "f", "y", "n"}  # rundir._as_bool
_SQLITE_MAGIC = b"SQLite format 3\x00"


def _short(value: Any, n: int = 40) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = repr(text) if isinstance(value, str) else text
    return text if len(text) <= n else text[: n - 1] + "…"


# 1) files ---------------------------------------------------------------------------------------------


def file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be read as a file (a directory, a broken or looping link, a pipe or device);
    None when it is a regular file or does not exist at all."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "a broken symbolic link" if path.is_symlink() else None
    except OSError as exc:
        return "a symbolic link that loops" if exc.errno == errno.ELOOP else f"unreadable ({exc.strerror or exc})"
    if stat.S_ISDIR(mode):
        return "a directory, not a file"
    return None if stat.S_ISREG(mode) else "not a regular file"


def read_text(path: Path, what: str) -> str:
    """``path``'s text (UTF-8, a BOM allowed). A file that is not text is one line naming the line of its
    first bad byte."""
    problem = file_problem(path)
    if problem:
        raise UserError(f"{path}: {problem}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UserError(f"{path}:{line}: not {what}: byte {data[exc.start]:#04x} is not UTF-8 text") from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise UserError(f"{path}:{line}: not {what}: it holds NUL bytes") from None
    return text


def output_problem(path: Path, folder: bool) -> str | None:
    """Why a report or a search could not write ``path``: a directory where a file goes (an atomic write
    replaces files and links, never a directory), anything but a directory where a folder goes."""
    if folder:
        if os.path.lexists(path) and not path.is_dir():
            return f"{file_problem(path) or 'a file'} where a folder goes; move it away"
        return None
    if path.is_dir() and not path.is_symlink():
        return "a directory where a file goes; move it away"
    return None


# 2) trials.csv ----------------------------------------------------------------------------------------


def check_trials_text(path: Path, text: str, required: Sequence[str] = ()) -> None:
    """trials.csv as the search writes it: a header with the required columns, each once; every row as
    long as the header; trial numbers, states, numbers, stages and recipe JSON that parse."""
    if not text.strip():
        raise UserError(f"{path}: empty file (not even the header row); the search rewrites it from the study "
                        "(recipesearch search ... --resume)")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
        seen: set[str] = set()
        for name in header:
            if name in seen:
                raise UserError(f"{path}:1: column {name!r} appears twice")
            seen.add(name)
        missing = [c for c in dict.fromkeys([*REQUIRED_COLUMNS, *required]) if c not in seen]
        if missing:
            raise UserError(f"{path}:1: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                            f"(the header has {len(header)}: {_short(','.join(header), 60)})")
        index = {name: i for i, name in enumerate(header)}
        numbers: dict[int, int] = {}
        for row in reader:
            if not row:  # a blank line
                continue
            line = reader.line_num
            if len(row) != len(header):
                fields = f"{len(row)} field{'s' if len(row) != 1 else ''}"
                raise UserError(f"{path}:{line}: {fields} where the header has {len(header)} "
                                "(a truncated or damaged row)")
            _check_row(path, line, {name: row[i].strip() for name, i in index.items()}, numbers,
                       NUMERIC_COLUMNS, STAGES)
    except csv.Error as exc:
        raise UserError(f"{path}:{reader.line_num}: not a readable CSV file ({exc})") from None


def _check_row(path: Path, line: int, row: dict[str, str], numbers: dict[int, int], numeric: Sequence[str],
               stages: Sequence[str]) -> None:
    def bad(column: str, what: str) -> UserError:
        return UserError(f"{path}:{line}: {column}: {_short(row[column])} {what}")

    number = _number(row["number"])
    if number is None or not number.is_integer() or number < 0:
        raise bad("number", "is not a trial number")
    if int(number) in numbers:
        raise bad("number", f"is given twice (line {numbers[int(number)]} too)")
    numbers[int(number)] = line
    if row["state"].upper() not in TRIAL_STATES:
        raise bad("state", f"is not a trial state ({', '.join(TRIAL_STATES)})")
    if row["is_baseline"].lower() not in _BOOLS:
        raise bad("is_baseline", "is not True or False")
    for column in numeric:
        if column in row and row[column].lower() not in _MISSING and _number(row[column]) is None:
            raise bad(column, "is not a number")
    if row.get("stage") and row["stage"] not in stages:
        raise bad("stage", f"is not a stage ({', '.join(stages)})")
    if row.get("recipe_json"):
        try:
            recipe = json.loads(row["recipe_json"])
        except (json.JSONDecodeError, RecursionError):
            raise bad("recipe_json", "is not valid JSON") from None
        if not isinstance(recipe, dict):
            raise bad("recipe_json", "is not a JSON object (a recipe)")


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) and text.lower() not in _MISSING else value


# 3) run.json ------------------------------------------------------------------------------------------


def parse_meta(path: Path, text: str) -> dict[str, Any]:
    """run.json's object, with the fields a report or a resume relies on checked for their types."""
    if not text.strip():
        raise UserError(f"{path}: empty file, not a JSON object")
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise UserError(f"{path}: not valid JSON (nested too deeply)") from None
    if not isinstance(meta, dict):
        raise UserError(f"{path}: must hold a JSON object, not {_json_kind(meta)}")
    _check_meta(path, meta)
    return meta


def _json_kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _check_meta(path: Path, meta: dict[str, Any]) -> None:
    from recipesearch.analysis.frontier import DIRECTIONS

    def check(field: str, ok: bool, what: str) -> None:
        if field in meta and meta[field] is not None and not ok:
            raise UserError(f"{path}: {field}: must be {what}, not {_short(meta[field])}")

    def text_list(value: Any, allowed: Iterable[str] | None = None) -> bool:
        return isinstance(value, list) and all(isinstance(v, str) and (allowed is None or v in allowed)
                                               for v in value)

    for field in ("status", "space_name", "space_hash", "start_time", "end_time", "storage", "run_dir"):
        check(field, isinstance(meta.get(field), str), "text")
    check("metric_split", meta.get("metric_split") in ("test", "val"), "'test' or 'val'")
    objectives = meta.get("objectives")
    check("objectives", text_list(objectives, DIRECTIONS) and bool(objectives)
          and any(DIRECTIONS[o] == "maximize" for o in objectives),
          f"a list of {', '.join(DIRECTIONS)} with one to maximize")
    check("directions", text_list(meta.get("directions"), ("maximize", "minimize")),
          "a list of 'maximize' / 'minimize'")
    for field in ("hardware", "versions", "library_versions"):
        check(field, isinstance(meta.get(field), dict), "an object")
    check("command", text_list(meta.get("command")), "a list of strings")
    check("sessions", isinstance(meta.get("sessions"), list)
          and all(isinstance(s, dict) for s in meta["sessions"]), "a list of objects")


# 4) space.yaml ----------------------------------------------------------------------------------------


def check_space_text(path: Path, text: str) -> None:
    """The run directory's copy of the space: YAML holding a mapping (the report shows it, names the space
    after it; it is validated in full only by a resume, which also has the original file)."""
    from recipesearch.errors import ConfigError
    from recipesearch.yamlio import parse_yaml

    data, _ = parse_yaml(text, str(path))
    if not isinstance(data, dict):
        what = "empty" if data is None else f"{_json_kind(data)}"
        raise ConfigError("", f"not a search space: a YAML mapping was expected, the file holds {what}", str(path))


# 5) study.db ------------------------------------------------------------------------------------------


def check_study_db(path: Path, study: str, directions: Sequence[str]) -> None:
    """The run directory's SQLite study, opened read-only: a database in one piece that holds the study
    ``study`` with these directions, so --resume continues it instead of creating an empty one."""
    import sqlite3

    problem = file_problem(path)
    if problem:
        raise UserError(f"{path}: {problem}")
    try:
        with open(path, "rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if head != _SQLITE_MAGIC:
        raise UserError(f"{path}: not an SQLite database{' (empty file)' if not head else ''}; --resume needs the "
                        "search's study (restore it, or start again with --force)")
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise UserError(f"{path}: cannot open it ({exc})") from None
    try:
        try:
            if con.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                raise sqlite3.DatabaseError("database disk image is malformed")
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorname", "").startswith("SQLITE_READONLY"):
                return  # a hot journal (a search killed mid-write): Optuna's first connection rolls it back
            raise
        tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        needed = ("studies", "study_directions", "trials")
        if not set(needed) <= tables:
            raise UserError(f"{path}: an SQLite database without Optuna's tables ({', '.join(needed)}); "
                            "not the study of a search")
        names = [row[0] for row in con.execute("SELECT study_name FROM studies ORDER BY study_id")]
        if study not in names:
            held = f"it holds {', '.join(map(repr, names))}" if names else "it holds no study"
            raise UserError(f"{path}: no study named {study!r} ({held}); is it the study of this search?")
        found = [str(row[0]).lower() for row in con.execute(
            "SELECT d.direction FROM study_directions d JOIN studies s ON s.study_id = d.study_id "
            "WHERE s.study_name = ? ORDER BY d.objective", (study,))]
    except sqlite3.Error as exc:
        raise UserError(f"{path}: a damaged SQLite database ({exc}); the study of the search cannot be read") \
            from None
    finally:
        con.close()
    if found != [d.lower() for d in directions]:
        raise UserError(f"{path}: the study {study!r} has directions {found}, the space {list(directions)}")
