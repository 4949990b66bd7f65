"""What every figure of the report draws with: the palette, axis formatting, and seed intervals as error bars.

Frontier, baseline and recipe-curve points are seed means (``analysis.frontier``); points measured on two
or more seeds carry their 95 % intervals on accuracy and time as error bars (one seed has no interval, so
none is drawn). User strings (space names, algorithms) go through ``plain`` so matplotlib draws them
literally.
"""
from __future__ import annotations

import numpy as np

from recipesearch.analysis.points import metric_interval_columns
from recipesearch.report.info import ReportInfo
from recipesearch.trials_columns import TIME

FRONT, TRIAL, BASE = "#1d4ed8", "#9ca3af", "#111827"
GOOD, BAD = "#15803d", "#b91c1c"
CURVE_COLORS = ["#1d4ed8", "#d97706", "#059669", "#db2777", "#7c3aed", "#0891b2"]


def plain(text: str) -> str:
    """Matplotlib reads $...$ as mathtext (and can raise on it): user strings are drawn literally."""
    return str(text).replace("$", r"\$")


def shorten(text: str, n: int = 48) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def percent_axis(ax, axis: str = "y") -> None:
    from matplotlib.ticker import FuncFormatter

    fmt = FuncFormatter(lambda v, _: f"{100 * v:.3g}%")
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(fmt)


def seconds_axis(ax, times: np.ndarray, always_log: bool = False) -> None:
    """Log time axis when the times span more than 3x (or always), with plain-number tick labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    t = times[np.isfinite(times) & (times > 0)]
    if len(t) and (always_log or t.max() / t.min() > 3):
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("training time (s)")


def empty_axes(ax, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, color="#6b7280", fontsize=11)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)


def budget_text(b: float) -> str:
    return f"×{b:g}" if np.isfinite(b) else ""


def axis_limits(values: np.ndarray, log: bool, low: float, high: float) -> tuple[float, float]:
    """Axis limits around finite ``values`` with margins (fractions of the span, or factors on a log axis)."""
    v = values[np.isfinite(values) & ((values > 0) if log else True)]
    if not len(v):
        return (1.0, 10.0) if log else (0.0, 1.0)
    lo, hi = float(v.min()), float(v.max())
    if log:
        return lo / (1 + low), hi * (1 + high)
    span = hi - lo or max(abs(hi) * 0.05, 0.01)
    return lo - low * span, hi + high * span


def accuracy_axis_label(info: ReportInfo) -> str:
    return "validation accuracy (selected on)" if info.selection.on_val else "test accuracy"


def float_column(df, name: str) -> np.ndarray:
    """A column as floats ([] when the table lacks it)."""
    return df[name].to_numpy(float) if name in df else np.empty(0)


def _repeated(df, acc_col: str) -> np.ndarray:
    """Rows measured on two or more seeds whose intervals are finite: the ones that get error bars."""
    if df.empty or "n_seeds" not in df:
        return np.zeros(len(df), dtype=bool)
    n = df["n_seeds"].to_numpy(float)
    cis = [float_column(df, c) for c in (*metric_interval_columns(acc_col), "train_seconds_ci_low",
                                         "train_seconds_ci_high")]
    if any(len(c) != len(df) for c in cis):
        return np.zeros(len(df), dtype=bool)
    return (n >= 2) & np.logical_and.reduce([np.isfinite(c) for c in cis])


def has_repeats(df, acc_col: str) -> bool:
    return bool(_repeated(df, acc_col).any())


def error_bars(ax, points, acc_col: str, color: str, zorder: float = 3, alpha: float = 0.9, **style) -> None:
    """95 % intervals of accuracy (vertical) and time (horizontal) for the points with two or more seeds."""
    rows = points[_repeated(points, acc_col)]
    if rows.empty:
        return
    t, a = rows[TIME].to_numpy(float), rows[acc_col].to_numpy(float)
    t_low, t_high = rows["train_seconds_ci_low"].to_numpy(float), rows["train_seconds_ci_high"].to_numpy(float)
    a_low, a_high = (rows[c].to_numpy(float) for c in metric_interval_columns(acc_col))
    # a time interval's low end can fall below 0 (few noisy seeds): on a log axis it then runs off the left edge
    t_low = np.where(t_low > 0, t_low, t * 1e-3)
    xerr, yerr = np.clip([t - t_low, t_high - t], 0, None), np.clip([a - a_low, a_high - a], 0, None)
    ax.errorbar(t, a, xerr=xerr, yerr=yerr, fmt="none", ecolor=color, elinewidth=0.9, capsize=2.5, alpha=alpha,
                zorder=zorder, **style)


def speedup_label(x: float, status: str) -> str:
    """Short speedup text for plot labels: '2.3×', '≤1.3×' below the baseline's range, '' otherwise."""
    if not np.isfinite(x):
        return ""
    return f"≤{x:.2g}×" if status == "below_baseline" else f"{x:.2g}×"
