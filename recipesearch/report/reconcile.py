"""What ``report`` and ``export`` trust, checked before anything is written.

- **The selection** (objectives, directions, the split selected on) is run.json's. Where run.json is missing
  or lacks it, it comes from space.yaml, which the search wrote at its start too, and a note says so; with
  neither, which split the search selected on is unknown, and nothing is reported (a report on the wrong
  split would name another headline and delete recipe files of the right one).
- **The trials**: study.db (the run directory's own SQLite study, the source of truth that ``--resume`` also
  rebuilds from) is compared with trials.csv: trial numbers, states, stages, baselines, budgets and the
  objective values. Where they differ, trials.csv is rebuilt from study.db, as the search writes it, and a
  note says how they differed. A study elsewhere (``--storage``) is not opened: trials.csv is trusted.
- **While a search drives the run directory** (its lock held, ``runlock``), trials.csv is its own fresh
  output, one trial behind study.db at most: trusted as it is, never rewritten from here.

The notes reach the report's warnings through run_meta's ``report_notes`` and ``recipesearch report``'s output.
"""
from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

from recipesearch.errors import UserError
from recipesearch.rundir import RunDir, write_atomic
from recipesearch.runlock import Held, run_dir_lock

if TYPE_CHECKING:
    import pandas as pd


NOTES_KEY = "report_notes"
COMPARED = ("state", "stage", "is_baseline", "budget", "accuracy", "val_accuracy", "train_seconds")


def driver_alive(run: RunDir) -> bool:
    """Whether a search holds the run directory's lock right now (it then owns trials.csv)."""
    if not run.root.is_dir():
        return False
    try:
        run_dir_lock(run.root).acquire(publish=False).release()
    except Held:
        return True
    except OSError:
        return False
    return False


def _space_mapping(space_text: str) -> dict[str, Any] | None:
    import yaml

    try:
        data = yaml.safe_load(space_text) if space_text else None
    except yaml.YAMLError:
        return None
    return data if isinstance(data, dict) else None


def selection_meta(run: RunDir, meta: dict[str, Any], space_text: str) -> tuple[dict[str, Any], list[str]]:
    """run.json's meta; where run.json is missing, the selection as space.yaml sets it (read for those fields
    alone, with the space file's defaults: its base recipe, a file beside the original space, need not be
    here) and a note. A run.json without them is an older search's: its defaults stand."""
    if os.path.lexists(run.run_json) or not (os.path.lexists(run.trials_csv) or run.study_db.is_file()):
        return meta, []  # (nothing to report at all: read_trials says so)
    from recipesearch.analysis.frontier import DIRECTIONS
    from recipesearch.space.schema import SpaceFile

    data = _space_mapping(space_text)
    if data is None:
        raise UserError(f"{run.run_json} is missing, and {run.space_yaml} "
                        f"{'is missing' if not space_text else 'is not a space file'}: which split the search "
                        "selected on is unknown, so nothing is reported (restore either file)")
    split = data.get("metric_split", SpaceFile.model_fields["metric_split"].default)
    objectives = data.get("objectives", SpaceFile.model_fields["objectives"].default)
    if split not in ("val", "test") or not (isinstance(objectives, list) and objectives
                                           and all(o in DIRECTIONS for o in objectives)):
        raise UserError(f"{run.run_json} is missing, and {run.space_yaml}'s metric_split / objectives do not say "
                        "how the search selected: nothing is reported (restore run.json)")
    filled = {"objectives": list(objectives), "directions": [DIRECTIONS[o] for o in objectives],
              "metric_split": split, "target": data.get("target", "baseline")}  # from_run_meta checks it
    if isinstance(data.get("name"), str):
        filled["space_name"] = data["name"]
    note = (f"{run.run_json.name} is missing: the selection (objectives {', '.join(objectives)}, selected on "
            f"{split}) is space.yaml's")
    return {**filled, **meta}, [note]


def _study_frame(run: RunDir, name: str | None) -> pd.DataFrame | None:
    """study.db's trials as the search writes trials.csv, opened read-only; None when it cannot be read (or
    ``name`` is unknown and the file holds more than one study)."""
    import optuna

    from recipesearch.engine.trial_rows import trials_frame

    url = f"sqlite:///file:{run.study_db.resolve()}?mode=ro&uri=true"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        storage = optuna.storages.RDBStorage(url, skip_table_creation=True, skip_compatibility_check=True)
        names = optuna.get_all_study_names(storage)
        if name is None and len(names) == 1:  # run.json and space.yaml name none: the file's one study
            name = names[0]
        if name not in names:
            return None
        trials = optuna.load_study(study_name=name, storage=storage).get_trials(deepcopy=False)
    except Exception:  # noqa: BLE001 - a locked, damaged or foreign file: trials.csv is all there is
        return None
    space = _loaded_space(run)
    return trials_frame(trials, space, space.param_names() if space is not None else None)


def _loaded_space(run: RunDir) -> Any:
    """The SearchSpace of space.yaml where it loads here (a column per parameter, as the search writes
    trials.csv, even for parameters no trial sampled yet); None where it does not (its base file moved)."""
    from recipesearch.space import load_space

    try:
        return load_space(run.space_yaml) if run.space_yaml.is_file() else None
    except (UserError, OSError):
        return None


def _same(a: Any, b: Any) -> bool:
    fa, fb = _number(a), _number(b)
    if fa is not None and fb is not None:
        return (math.isnan(fa) and math.isnan(fb)) or math.isclose(fa, fb, rel_tol=1e-6, abs_tol=1e-9)
    return str(a if a == a else "") == str(b if b == b else "")  # NaN compared as empty text


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def differences(csv: pd.DataFrame, study: pd.DataFrame) -> list[str]:
    """How trials.csv differs from study.db's table (empty: they agree), in a few words each."""
    from recipesearch.rundir import normalise_trials

    a = normalise_trials(csv).set_index("number")
    b = normalise_trials(study).set_index("number")
    found = []
    if set(a.index) != set(b.index):
        only_db = sorted(set(b.index) - set(a.index))
        only_csv = sorted(set(a.index) - set(b.index))
        found.append(f"trials.csv has {len(a)} trials, study.db {len(b)}"
                     + (f" (missing {_few(only_db)})" if only_db else "")
                     + (f" (not in study.db: {_few(only_csv)})" if only_csv else ""))
    for number in sorted(set(a.index) & set(b.index)):
        for column in COMPARED:
            if column in a.columns and column in b.columns and not _same(a.at[number, column], b.at[number, column]):
                found.append(f"trial {number}'s {column} is {a.at[number, column]} in trials.csv, "
                             f"{b.at[number, column]} in study.db")
                break
        if len(found) >= 3:
            break
    return found


def _few(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:5])
    return f"trial{'s' if len(numbers) > 1 else ''} {shown}" + (f" and {len(numbers) - 5} more" if len(numbers) > 5
                                                                  else "")


def reconcile_trials(run: RunDir, meta: dict[str, Any], space_text: str) -> tuple[pd.DataFrame | None, list[str]]:
    """study.db's table when trials.csv is missing, damaged or disagrees with it (written back to trials.csv
    where the folder allows), else None; the notes to show."""
    recorded = str(meta.get("storage") or "")
    if (recorded and not recorded.startswith("sqlite")) or not run.study_db.is_file() or driver_alive(run):
        return None, []
    study = _study_frame(run, meta.get("space_name"))
    if study is None or study.empty:
        return None, []
    if not os.path.lexists(run.trials_csv):
        why = "was missing"
    else:
        try:
            found = differences(run.read_trials(), study)
        except UserError as exc:
            found = [f"it is damaged: {exc}"]
        if not found:
            return None, []
        why = f"disagreed with study.db ({'; '.join(found)})"
    try:
        write_atomic(run.trials_csv, study.to_csv(index=False))
        done = "rebuilt from study.db, the search's record"
    except OSError as exc:
        done = f"reported from study.db, the search's record (trials.csv not rewritten: {exc.strerror or exc})"
    return study, [f"trials.csv {why}: {done} ({len(study)} trials)"]
