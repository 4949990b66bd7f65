"""A frontier point in words: its algorithms, how far its claim is confirmed, and its recipe file's lines.

The same wording serves the report's tables (``evidence``, ``algorithms_label``), the plots' labels and
the provenance header of each exported recipe (``front_recipes``). Header text is ASCII on purpose:
recipe files are read back with the platform's default encoding.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from recipesearch.analysis import finite, interval_text
from recipesearch.analysis.points import metric_interval_columns
from recipesearch.report.selection import Selection
from recipesearch.trials_columns import ACCURACY, TIME


def algorithms_label(algorithms: str, is_baseline: bool = False) -> str:
    """'label_smoothing+mixup' -> 'label_smoothing + mixup'; none -> 'baseline' or 'no algorithms'."""
    if algorithms:
        return algorithms.replace("+", " + ")
    return "baseline" if is_baseline else "no algorithms"


def _fmt(x: float, spec: str) -> str:
    return format(x, spec) if isinstance(x, (int, float)) and np.isfinite(x) else "n/a"


_SPEEDUP_NOTE = {  # how the speedup line of a recipe's header reads, by status
    "interpolated": "{}x",
    "below_baseline": "at most {}x (less accurate than the shortest baseline run)",
    "beyond_baseline": "n/a (more accurate than any baseline run)",
    "no_baseline": "n/a (no baseline trial)",
}


def _seeds(row: pd.Series) -> int:
    """Seeds behind a frontier point (1 for a table without seed statistics)."""
    n = row.get("n_seeds")
    return int(n) if finite(n) else 1


def _plus_minus(row: pd.Series, col: str, low: str, high: str, spec: str) -> str:
    """'0.9500 +/- 0.0050' (mean and 95 % CI half-width) for a repeated point, '0.9500' for a single run.

    ASCII on purpose: recipe files are read back with the platform's default encoding."""
    text = _fmt(row.get(col, np.nan), spec)
    lo, hi = row.get(low, np.nan), row.get(high, np.nan)
    if _seeds(row) >= 2 and finite(lo) and finite(hi):
        text += f" +/- {format((float(hi) - float(lo)) / 2, spec)}"
    return text


def _measured(row: pd.Series, selection: Selection) -> str:
    """The accuracies of a recipe's provenance comment: the one selected on (mean +/- CI), then test as held out."""
    selected = _plus_minus(row, selection.metric, *metric_interval_columns(selection.metric), ".4f")
    if not selection.on_val:
        return f"accuracy {selected} (test split, also selected on)"
    return f"val_accuracy {selected} (selected on), test accuracy {_fmt(row[ACCURACY], '.4f')} (held out)"


def measured_line(row: pd.Series, selection: Selection) -> str:
    n = _seeds(row)
    over = (f"over {n} seeds (mean +/- 95% CI half-width)" if n >= 2
            else "on a single run (one seed: no interval)")
    return (f"measured at budget {_fmt(row['budget'], 'g')} {over}: {_measured(row, selection)}, train_seconds "
            f"{_plus_minus(row, TIME, 'train_seconds_ci_low', 'train_seconds_ci_high', '.2f')}; "
            f"algorithms: {row['algorithms'] or 'none'}")


def point_speedup_line(row: pd.Series) -> str:
    if bool(row.get("is_baseline", False)):
        return "speedup at matched accuracy vs the baseline: n/a (this is the baseline recipe)"
    speed = _SPEEDUP_NOTE.get(str(row["speedup_status"]), "{}x ({})").format(
        _fmt(row["speedup"], ".2f"), str(row["speedup_status"]).replace("_", " "))
    if str(row["speedup_status"]) == "interpolated":
        if _seeds(row) < 2:  # one run: a bootstrap over it measures no noise, so no interval is stated
            speed += " (one seed: not confirmed)"
        elif bool(row.get("confirmed", False)):
            speed += interval_text(row.get("speedup_ci_low"), row.get("speedup_ci_high")) + \
                ", confirmed faster (interval above 1)"
        else:
            speed += interval_text(row.get("speedup_ci_low"), row.get("speedup_ci_high")) + " (not confirmed)"
    return f"speedup at matched accuracy vs the baseline at this point: {speed}"


def curve_line(row: pd.Series, selection: Selection) -> str:
    """The recipe's tradeoff curve against the baseline's (CURVE_COLUMNS of the frontier row)."""
    if bool(row.get("is_baseline", False)):
        return "the baseline's tradeoff curve is what every speedup is measured against"
    budgets = row.get("curve_budgets", np.nan)
    if not finite(budgets):
        return "recipe curve: none (this recipe was trained at one budget only)"
    status, seeds = str(row.get("curve_status", "")), _curve_seeds(row)
    speed = (f"{_fmt(row['curve_speedup'], '.2f')}x" if finite(row.get("curve_speedup"))
             else f"n/a ({status.replace('_', ' ') or 'no speedup'})")
    if seeds >= 2 and finite(row.get("curve_speedup")):
        speed += interval_text(row["curve_ci_low"], row["curve_ci_high"])
    verdict = ("confirmed faster (interval above 1)" if bool(row.get("curve_confirmed", False)) else
               "not confirmed (one seed per budget)" if seeds < 2 else "not confirmed")
    label = "val acc" if selection.on_val else "test acc"
    return (f"recipe curve over {int(budgets)} budgets vs the baseline's: {speed} at {label} "
            f"{_fmt(row.get('curve_target', np.nan), '.4f')}, {seeds}+ seeds per budget; {verdict}")


def _curve_seeds(row: pd.Series) -> int:
    n = row.get("curve_seeds")
    return int(n) if finite(n) else 0


def evidence(row: pd.Series | dict[str, Any]) -> str:
    """How far a frontier point's claim is confirmed, in a few words (regime table, recipe cards)."""
    row = pd.Series(row) if isinstance(row, dict) else row
    n = _seeds(row)
    if bool(row.get("is_baseline", False)):
        return f"baseline, {n} seed{'s' if n != 1 else ''}"
    if bool(row.get("curve_confirmed", False)):
        return (f"confirmed: curve {_fmt(row['curve_speedup'], '.2f')}x"
                f"{interval_text(row['curve_ci_low'], row['curve_ci_high'])} over {int(row['curve_budgets'])} budgets")
    if bool(row.get("confirmed", False)):
        ci = interval_text(row["speedup_ci_low"], row["speedup_ci_high"])
        return f"confirmed at this budget: {_fmt(row['speedup'], '.2f')}x{ci}"
    return f"not confirmed ({n} seeds)" if n >= 2 else "not confirmed (single run)"
