"""The report's tables computed from a ``Frontier``: front rows with their recipe curves, regimes, budget curves.

Each is chosen and ranked on the metric the search selected on (never on test accuracy, which is
carried next to it as the held-out figure).
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from recipesearch.analysis import regime_recipes
from recipesearch.report.point_text import algorithms_label, evidence
from recipesearch.trials_columns import ACCURACY, TIME

MAX_CURVE_GROUPS = 5  # recipes drawn in the accuracy-vs-time-across-budgets plot


# Columns of a frontier row describing its recipe's curve (from Frontier.recipes, joined on recipe_key).
CURVE_COLUMNS = {"n_budgets": "curve_budgets", "n_seeds": "curve_seeds", "speedup": "curve_speedup",
                 "speedup_ci_low": "curve_ci_low", "speedup_ci_high": "curve_ci_high",
                 "speedup_status": "curve_status", "target_accuracy": "curve_target",
                 "confirmed": "curve_confirmed"}  # fmt: skip


def with_curves(front: pd.DataFrame, recipes: pd.DataFrame) -> pd.DataFrame:
    """The frontier rows with their recipe's curve (CURVE_COLUMNS): NaN / '' / False without one."""
    out = front.copy()
    curves = recipes.set_index("recipe_key")[list(CURVE_COLUMNS)].rename(columns=CURVE_COLUMNS) \
        if len(recipes) and "recipe_key" in front else None
    for col in CURVE_COLUMNS.values():
        if curves is not None:
            out[col] = out["recipe_key"].map(curves[col])
        else:
            out[col] = np.nan
    out["curve_status"] = out["curve_status"].map(lambda v: v if isinstance(v, str) else "")
    out["curve_confirmed"] = out["curve_confirmed"].map(lambda v: bool(v) if isinstance(v, (bool, np.bool_)) else False)
    return out


def regimes(front: pd.DataFrame, budgets: tuple[float, ...], metric: str) -> pd.DataFrame:
    """Regime recipes picked on the metric from the frontier (confirmed points once confirmation ran), with
    the frontier's test accuracy, seeds, speedup, recipe and ``evidence`` (whether the claim is confirmed)."""
    shown = ["algorithms", "is_baseline", "speedup", "speedup_status", "speedup_ci_low", "speedup_ci_high",
             "confirmed", "recipe_id", "n_seeds", *CURVE_COLUMNS.values(), "evidence", "regime_confirmed"]
    if metric != ACCURACY:
        shown.insert(0, ACCURACY)  # test accuracy: shown next to the metric, never used to pick
    if not (len(front) and front["budget"].notna().any()):
        return pd.DataFrame(columns=["band", "label", "number", "budget", metric, TIME, *shown])
    front = front.assign(evidence=[evidence(r) for _, r in front.iterrows()],
                         regime_confirmed=front["confirmed"].astype(bool) | front["curve_confirmed"].astype(bool))
    picked = regime_recipes(front[front["budget"].notna()], all_budgets=list(budgets), metric=metric)
    return picked.join(front.set_index("number")[shown], on="number")


def _fmt_param(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def _group_key(row: pd.Series, param_cols: list[str]) -> str:
    """Identity of a recipe apart from its budget (and seed): the recipe JSON without them, else the params."""
    try:
        data = json.loads(row["recipe_json"]) if row["recipe_json"] else None
    except json.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        for key in ("budget", "name", "seed"):
            data.pop(key, None)
        return json.dumps(data, sort_keys=True)
    params = {c: row[c] for c in param_cols if pd.notna(row[c])}
    return json.dumps([row["algorithms"], params], sort_keys=True, default=str)


def budget_curves(completed: pd.DataFrame, param_cols: list[str], metric: str = ACCURACY) -> pd.DataFrame:
    """Mean metric, test accuracy and time per budget of the leading recipes tried at >= 2 budgets.

    Recipes are ranked by (has a frontier point, best metric): ranking chooses what is drawn, so it is on
    the metric selected on, never on test. The baseline is drawn separately.
    """
    accs = list(dict.fromkeys([metric, ACCURACY]))  # the metric, then test accuracy when they differ
    columns = ["group", "label", "budget", *accs, TIME, "n", "on_front"]
    cand = completed[~completed["is_baseline"] & completed["budget"].notna()]
    if cand.empty:
        return pd.DataFrame(columns=columns)
    not_budget = [c for c in param_cols if not c.endswith("budget")]
    keys = cand.apply(lambda r: _group_key(r, not_budget), axis=1)
    ranked = []
    for key, g in cand.groupby(keys, sort=False):
        if g["budget"].nunique() >= 2:
            ranked.append((bool(g["on_front"].any()), float(g[metric].max()), -int(g["number"].min()), key, g))
    ranked.sort(key=lambda x: x[:3], reverse=True)
    rows = []
    for rank, (_, _, _, _, g) in enumerate(ranked[:MAX_CURVE_GROUPS]):
        first = g.iloc[0]
        varied = [c for c in not_budget if pd.notna(first[c])][:3]
        label = algorithms_label(first["algorithms"])
        if varied:
            label += " (" + ", ".join(f"{c.removeprefix('params_').split('.')[-1]}={_fmt_param(first[c])}"
                                      for c in varied) + ")"
        for budget, b in g.groupby("budget"):
            rows.append([rank, label, float(budget), *(float(b[c].mean()) for c in accs), float(b[TIME].mean()),
                         len(b), bool(b["on_front"].any())])
    return pd.DataFrame(rows, columns=columns)
