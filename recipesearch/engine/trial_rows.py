"""trials.csv rows from the study's trials: a pure function of the study, so the table and ``optuna.load_study``
(or optuna-dashboard) always agree.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from optuna.trial import FrozenTrial

from recipesearch.engine.study import OF_TRIAL, RUNGS, stage_of, trial_params
from recipesearch.rundir import HEAD_COLUMNS, TAIL_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

    from recipesearch.space import SearchSpace


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
