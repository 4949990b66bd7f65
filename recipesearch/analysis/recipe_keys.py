"""What identifies a recipe across its budgets and seeds: the ``recipe_key`` of every row of trials.csv.

Runs with one key at one budget are the seeds of one frontier point, and a key's points over budgets
are its tradeoff curve, so the key must not depend on the budget, the seed, or how a table spells a
value (1e-3 vs 0.001, "True" vs True). Every baseline run has the one key ``BASELINE_KEY``.
"""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

BASELINE_KEY = "baseline"  # recipe_key of every baseline run


def recipe_keys(df: pd.DataFrame) -> pd.Series:
    """What identifies a recipe across budgets and seeds: a ``recipe_key`` column when the table has one;
    else the params without the budget (trials.csv); else the recipe JSON without budget and seed; else
    each row is its own recipe (so are rows whose key is empty). Every baseline run is the one recipe
    ``BASELINE_KEY``. Reads ``number``, ``is_baseline`` and ``algorithms``, so call it once they are filled
    in (``frontier``'s input typing does)."""
    if "recipe_key" in df:
        keys = df["recipe_key"].map(lambda v: "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v))
    else:
        params = [c for c in df.columns if c.startswith("params_") and c != "params_budget"]
        if params:
            def key(row: pd.Series) -> str:
                values = {c[7:]: _plain(row[c]) for c in params}
                # the algorithms too: implied by the alg.* params, but a table may not have those
                values["algorithms"] = row.get("algorithms", "")
                return json.dumps({k: v for k, v in values.items() if v is not None}, sort_keys=True)
            keys = df.apply(key, axis=1) if len(df) else pd.Series([], dtype=str)
        elif "recipe_json" in df:
            keys = df["recipe_json"].map(_recipe_json_key)
        else:
            keys = pd.Series([""] * len(df), index=df.index)
    keys = pd.Series(keys, index=df.index, dtype=object)
    own = keys.eq("")
    keys[own] = "trial-" + df.loc[own, "number"].astype(str)
    # A run of the base recipe is a baseline run whatever stage trained it (the LR sweep's run at the LR it
    # chose is the baseline's first seed at that budget).
    base = df["is_baseline"].to_numpy(dtype=bool).copy()
    base |= keys.isin(set(keys[base]) - set(keys[own])).to_numpy()
    keys[base] = BASELINE_KEY
    return keys.astype(str)


def _plain(value: Any) -> Any:
    """A param value as a key part: NaN (the param was not asked) is None; numbers to 10 digits."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(f"{float(value):.10g}")
    text = str(value)
    if text in ("True", "False"):
        return text == "True"
    try:
        return float(f"{float(text):.10g}")
    except ValueError:
        return text


def _recipe_json_key(text: Any) -> str:
    """A recipe JSON without what varies between the runs of one recipe (budget, seed, name, threads)."""
    try:
        data = json.loads(text) if isinstance(text, str) and text else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return ""
    for k in ("budget", "seed", "name", "threads"):
        data.pop(k, None)
    return json.dumps(data, sort_keys=True, default=str)
