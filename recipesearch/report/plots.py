"""The report's figures, drawn from a ``ReportInfo`` with matplotlib's object API (no pyplot state).

Each figure is rendered to SVG (inlined in index.html) and PNG (for slides and READMEs) and written to
``run_dir/plots/<name>.svg|png``. SVG text stays text (``svg.fonttype: none``): small files, selectable
labels, and matplotlib XML-escapes every string it writes, so a name like ``<script>`` is shown, not run.

Accuracy axes show the metric the search selected on (``info.metric``): the frontier, the baseline curve
and the headline arrow are defined on it, so drawing test accuracy instead would put "frontier" points
below other trials. The axis label names the split. Frontier, baseline and recipe-curve points are seed
means (``analysis.frontier``); points measured on two or more seeds carry their 95 % intervals on
accuracy and time as error bars (one seed has no interval, so none is drawn).
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import NamedTuple

import numpy as np

from recipesearch.analysis import interval_text
from recipesearch.analysis.objective_spec import TIME
from recipesearch.report.info import ReportInfo
from recipesearch.report.point_text import algorithms_label
from recipesearch.rundir import write_atomic

# (name, caption) in the order the report shows them.
PLOTS = {
    "pareto": "Accuracy against training time: every completed run (grey), the frontier (blue, labelled with "
              "its algorithms) and the baseline at each budget (black); frontier and baseline points are seed "
              "means, with 95 % confidence intervals on accuracy and time where a point has two or more seeds.",
    "tradeoff": "Tradeoff curves (MosaicML's plot): the baseline's seed mean at each budget with its 95 % band, "
                "and each recipe trained at two or more budgets through its per-budget seed means (error bars: "
                "95 % intervals). Confirmed-faster recipes are drawn solid, the others dashed; each label gives "
                "the curve's speedup at matched accuracy with its bootstrap interval.",
    "budget_curves": "Accuracy against training time across budgets for the leading recipes tried at two or more "
                     "budgets, next to the baseline's tradeoff curve.",
    "hypervolume": "Hypervolume of the frontier after each trial and against the training time spent so far.",
    "effects": "Per algorithm: budget-matched effect on accuracy, throughput change, and how often it appears "
               "on the frontier compared with all completed trials.",
}  # fmt: skip

_RC = {
    "svg.fonttype": "none",  # real <text> elements
    "svg.hashsalt": "recipesearch",  # stable ids: identical inputs give identical files
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica"],
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e5e7eb",
    "grid.linewidth": 0.7,
    "axes.edgecolor": "#6b7280",
    "axes.labelcolor": "#111827",
    "xtick.color": "#374151",
    "ytick.color": "#374151",
    "legend.frameon": False,
    "legend.fontsize": 8,
    "svg.image_inline": True,
}
FRONT, TRIAL, BASE = "#1d4ed8", "#9ca3af", "#111827"
GOOD, BAD = "#15803d", "#b91c1c"
PNG_DPI = 130
MAX_LABELS = 14  # frontier labels drawn on the Pareto plot (more would overlap)
MAX_TRADEOFF_CURVES = 6  # recipe curves drawn in the tradeoff-curves plot: confirmed ones first
CURVE_COLORS = ["#1d4ed8", "#d97706", "#059669", "#db2777", "#7c3aed", "#0891b2"]


class Plot(NamedTuple):
    svg: str
    png: bytes


def _plain(text: str) -> str:
    """Matplotlib reads $...$ as mathtext (and can raise on it): user strings are drawn literally."""
    return str(text).replace("$", r"\$")


def _short(text: str, n: int = 48) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _pct(ax, axis: str = "y") -> None:
    from matplotlib.ticker import FuncFormatter

    fmt = FuncFormatter(lambda v, _: f"{100 * v:.3g}%")
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(fmt)


def _seconds_axis(ax, times: np.ndarray, always_log: bool = False) -> None:
    """Log time axis when the times span more than 3x (or always), with plain-number tick labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    t = times[np.isfinite(times) & (times > 0)]
    if len(t) and (always_log or t.max() / t.min() > 3):
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("training time (s)")


def _empty(ax, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, color="#6b7280", fontsize=11)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)


def _budget_text(b: float) -> str:
    return f"×{b:g}" if np.isfinite(b) else ""


def _limits(values: np.ndarray, log: bool, low: float, high: float) -> tuple[float, float]:
    """Axis limits around finite ``values`` with margins (fractions of the span, or factors on a log axis)."""
    v = values[np.isfinite(values) & ((values > 0) if log else True)]
    if not len(v):
        return (1.0, 10.0) if log else (0.0, 1.0)
    lo, hi = float(v.min()), float(v.max())
    if log:
        return lo / (1 + low), hi * (1 + high)
    span = hi - lo or max(abs(hi) * 0.05, 0.01)
    return lo - low * span, hi + high * span


# Candidate label offsets around a point (points; horizontal and vertical alignment), tried in order.
_SPOTS = [(7, 3, "left", "bottom"), (7, -3, "left", "top"), (-7, 3, "right", "bottom"), (-7, -3, "right", "top"),
          (0, 8, "center", "bottom"), (0, -8, "center", "top"), (9, 13, "left", "bottom"), (9, -13, "left", "top")]


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def place_labels(
    ax, xy: np.ndarray, labels: list[str], fontsize: float, obstacles: np.ndarray, placed: list | None = None, **style
) -> list:
    """Annotate points greedily at the first spot that overlaps no placed label, marker or the axes edge.

    Text boxes are estimated (0.6 em per character) in display points from the axes' current transform,
    so call this after the axes position, scales and limits are final (a fixed layout, not constrained).
    Returns the occupied boxes: pass them as ``placed`` to a later call so its labels avoid these.
    """
    fig = ax.figure
    to_pt = 72.0 / fig.dpi
    pts = ax.transData.transform(xy) * to_pt
    obs = ax.transData.transform(obstacles) * to_pt if len(obstacles) else np.empty((0, 2))
    bbox = ax.get_window_extent().get_points() * to_pt
    frame = (bbox[0, 0], bbox[0, 1], bbox[1, 0], bbox[1, 1])
    placed = list(placed or []) + [(x - 4.5, y - 4.5, x + 4.5, y + 4.5) for x, y in obs]
    for (x, y), (xd, yd), text in zip(pts, xy, labels, strict=True):
        w, h = 0.6 * fontsize * len(text), 1.2 * fontsize
        best, best_cost = None, float("inf")
        for dx, dy, ha, va in _SPOTS:
            x0 = x + dx - (w if ha == "right" else w / 2 if ha == "center" else 0)
            y0 = y + dy - (h if va == "top" else 0)
            box = (x0, y0, x0 + w, y0 + h)
            outside = w * h - _overlap(box, frame)
            cost = sum(_overlap(box, p) for p in placed) + 2 * outside
            if cost < best_cost:
                best, best_cost = (dx, dy, ha, va, box), cost
            if cost == 0:
                break
        dx, dy, ha, va, box = best
        placed.append(box)
        ax.annotate(text, (xd, yd), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va, fontsize=fontsize,
                    **style)
    return placed


def _along(x: np.ndarray, y: np.ndarray, log: bool, n: int = 12) -> np.ndarray:
    """Points spaced along a polyline (x interpolated in log space on a log axis): obstacles for labels."""
    if len(x) < 2:
        return np.column_stack([x, y])
    u = np.linspace(0, 1, n)[:, None]
    fx = np.log(x) if log else x
    xs = (fx[:-1] + u * (fx[1:] - fx[:-1])).T.reshape(-1)
    ys = (y[:-1] + u * (y[1:] - y[:-1])).T.reshape(-1)
    return np.column_stack([np.exp(xs) if log else xs, ys])


def _acc_label(info: ReportInfo) -> str:
    return "validation accuracy (selected on)" if info.selection.on_val else "test accuracy"


def pareto_figure(info: ReportInfo):
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    fig = Figure(figsize=(9, 5.4))
    fig.subplots_adjust(left=0.085, right=0.985, bottom=0.1, top=0.93)
    ax = fig.subplots()
    ax.set_title(_plain(f"{_short(info.space_name, 60)}: accuracy vs training time"), loc="left")
    done = info.completed
    if done.empty:
        _empty(ax, "no completed trials yet")
        return fig
    acc_col = info.metric
    base, front = info.baseline_points, info.front
    times, accs = done[TIME].to_numpy(float), done[acc_col].to_numpy(float)
    _seconds_axis(ax, times)
    log = ax.get_xscale() == "log"
    spans = [front, base]  # the intervals drawn must fit too (a time interval below 0 runs off the edge)
    span_times = np.concatenate([times, *(_col(p, c) for p in spans for c in ("train_seconds_ci_low",
                                                                           "train_seconds_ci_high"))])
    ax.set_xlim(*_limits(span_times[~(span_times <= 0)], log, 0.2, 0.45 if log else 0.25))
    ax.set_ylim(*_limits(np.concatenate([accs, *(_col(p, "accuracy_ci_low") for p in spans),
                                         *(_col(p, "accuracy_ci_high") for p in spans)]), False, 0.08, 0.12))
    ax.set_ylabel(_acc_label(info))
    _pct(ax)
    ax.scatter(times, accs, s=18, color=TRIAL, alpha=0.5, linewidths=0, label="run (one seed)", zorder=2)
    if len(base):
        ax.plot(base[TIME], base[acc_col], "s--", color=BASE, ms=5, lw=1.2, label="baseline (mean by budget)",
                zorder=3)
        _error_bars(ax, base, acc_col, BASE, zorder=3)
    t, a = front[TIME].to_numpy(float), front[acc_col].to_numpy(float)
    right = ax.get_xlim()[1]
    ax.step(np.append(t, right), np.append(a, a[-1]), where="post", color=FRONT, lw=1.4, alpha=0.8, zorder=4)
    _error_bars(ax, front, acc_col, FRONT, zorder=4)
    ax.scatter(t, a, s=42, color=FRONT, edgecolors="white", linewidths=0.8,
               label="frontier (seed means)" if info.confirmed_front else "frontier (single runs)", zorder=5)
    h = info.headline
    handles, names = ax.get_legend_handles_labels()
    if _has_repeats(front) or _has_repeats(base):
        handles.append(Line2D([], [], color="#6b7280", lw=0.9, marker="|", ms=7))
        names.append("95% CI over seeds")
    if h.number is not None and np.isfinite(h.baseline_seconds) and np.isfinite(h.recipe_seconds):
        ax.axhline(h.baseline_accuracy, color=BASE, lw=0.7, ls=":", zorder=1)
        ax.annotate("", xy=(h.recipe_seconds, h.baseline_accuracy), xytext=(h.baseline_seconds, h.baseline_accuracy),
                    arrowprops={"arrowstyle": "->", "color": GOOD, "lw": 1.8}, zorder=6)
        handles.append(Line2D([], [], color=GOOD, lw=1.8, marker="<", ms=5))
        ci = interval_text(h.speedup_ci_low, h.speedup_ci_high, dash="–")
        names.append(f"{h.speedup:.2f}× faster{ci} to the baseline's accuracy (trial {h.number}'s curve, confirmed)")
    ax.legend(handles, names, loc="lower right")
    # Labels: frontier points (algorithms and speedup) and baseline budgets, placed around the markers.
    step = max(1, int(np.ceil(len(front) / MAX_LABELS)))
    keep = [i for i in range(len(front)) if i % step == 0 or i == len(front) - 1]
    labels = []
    for i in keep:
        r = front.iloc[i]
        text = _short(algorithms_label(r["algorithms"], bool(r["is_baseline"])), 36)
        speed = "" if bool(r["is_baseline"]) else speedup_label(r["speedup"], r["speedup_status"])
        labels.append(_plain(f"{text}  {speed}" if speed else text))
    stair_x, stair_y = np.repeat(t, 2)[1:], np.repeat(a, 2)[:-1]  # the staircase's corners
    obstacles = np.vstack([np.column_stack([t, a]), base[[TIME, acc_col]].to_numpy(float),
                           _along(stair_x, stair_y, log),
                           _along(base[TIME].to_numpy(float), base[acc_col].to_numpy(float), log)])
    if h.number is not None and np.isfinite(h.baseline_seconds) and np.isfinite(h.recipe_seconds):
        # keep labels off the speedup arrow
        arrow_x = np.geomspace(h.recipe_seconds, h.baseline_seconds, 8) if log else \
            np.linspace(h.recipe_seconds, h.baseline_seconds, 8)
        obstacles = np.vstack([obstacles, np.column_stack([arrow_x, np.full(8, h.baseline_accuracy)])])
    placed = place_labels(ax, np.column_stack([t[keep], a[keep]]), labels, 7.5, obstacles, color=FRONT, zorder=6)
    if len(base):
        place_labels(ax, base[[TIME, acc_col]].to_numpy(float), [_budget_text(b) for b in base["budget"]], 7,
                     np.empty((0, 2)), placed, color=BASE)
    return fig


def _col(df, name: str) -> np.ndarray:
    """A column as floats ([] when the table lacks it)."""
    return df[name].to_numpy(float) if name in df else np.empty(0)


def _repeated(df) -> np.ndarray:
    """Rows measured on two or more seeds whose intervals are finite: the ones that get error bars."""
    if df.empty or "n_seeds" not in df:
        return np.zeros(len(df), dtype=bool)
    n = df["n_seeds"].to_numpy(float)
    cis = [_col(df, c) for c in ("accuracy_ci_low", "accuracy_ci_high", "train_seconds_ci_low",
                                 "train_seconds_ci_high")]
    if any(len(c) != len(df) for c in cis):
        return np.zeros(len(df), dtype=bool)
    return (n >= 2) & np.logical_and.reduce([np.isfinite(c) for c in cis])


def _has_repeats(df) -> bool:
    return bool(_repeated(df).any())


def _error_bars(ax, points, acc_col: str, color: str, zorder: float = 3, alpha: float = 0.9, **style) -> None:
    """95 % intervals of accuracy (vertical) and time (horizontal) for the points with two or more seeds."""
    rows = points[_repeated(points)]
    if rows.empty:
        return
    t, a = rows[TIME].to_numpy(float), rows[acc_col].to_numpy(float)
    t_low, t_high = rows["train_seconds_ci_low"].to_numpy(float), rows["train_seconds_ci_high"].to_numpy(float)
    a_low, a_high = rows["accuracy_ci_low"].to_numpy(float), rows["accuracy_ci_high"].to_numpy(float)
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


def budget_curves_figure(info: ReportInfo):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 5))
    fig.subplots_adjust(left=0.085, right=0.985, bottom=0.11, top=0.93)
    ax = fig.subplots()
    ax.set_title("Accuracy vs time across budgets: leading recipes", loc="left")
    curves, base, acc_col = info.budget_curves, info.baseline_points, info.metric
    if curves.empty and base.empty:
        _empty(ax, "no recipe was trained at two or more budgets yet")
        return fig
    if len(base):
        base = base.sort_values(TIME)
        ax.plot(base[TIME], base[acc_col], "s--", color=BASE, ms=5, lw=1.4, label="baseline", zorder=4)
    if curves.empty:  # say so, rather than leave the reader looking for curves that are not there
        ax.text(0.98, 0.04, "no recipe besides the baseline was trained at two or more budgets",
                transform=ax.transAxes, ha="right", va="bottom", fontsize=9, color="#6b7280")
    for g, rows in curves.groupby("group", sort=True):
        rows = rows.sort_values(TIME)
        color = CURVE_COLORS[int(g) % len(CURVE_COLORS)]
        ax.plot(rows[TIME], rows[acc_col], "-", color=color, lw=1.6, label=_plain(_short(rows["label"].iloc[0], 70)))
        front = rows["on_front"].to_numpy(bool)
        ax.scatter(rows[TIME][front], rows[acc_col][front], s=36, color=color, zorder=5)
        ax.scatter(rows[TIME][~front], rows[acc_col][~front], s=36, facecolors="white", edgecolors=color, zorder=5)
        for _, r in rows.iterrows():
            ax.annotate(_budget_text(r["budget"]), (r[TIME], r[acc_col]), xytext=(4, 5), textcoords="offset points",
                        fontsize=7, color=color)
    times = np.concatenate([curves[TIME].to_numpy(float), base[TIME].to_numpy(float)])
    _seconds_axis(ax, times)
    ax.set_ylabel(f"{_acc_label(info)}, mean over seeds")
    _pct(ax)
    ax.legend(loc="best")
    return fig


def shown_curves(info: ReportInfo):
    """The recipe curves the tradeoff plot draws: confirmed ones first (as ``recipe_curves`` is sorted), at most
    MAX_TRADEOFF_CURVES, only those with points to draw."""
    curves, points = info.recipe_curves, info.points
    if curves.empty or points.empty:
        return curves.iloc[0:0]
    has_points = curves["recipe_key"].isin(set(points["recipe_key"]))
    return curves[has_points].head(MAX_TRADEOFF_CURVES)


def _curve_label(r) -> str:
    text = f"trial {int(r['number'])}: {_short(algorithms_label(r['algorithms']), 40)}"
    if np.isfinite(float(r["speedup"])):
        ci = interval_text(r["speedup_ci_low"], r["speedup_ci_high"], dash="–") if int(r["n_seeds"]) >= 2 else ""
        text += f"  {float(r['speedup']):.2f}×{ci}"
    else:
        text += f"  ({str(r['speedup_status']).replace('_', ' ')})"
    if bool(r["confirmed"]):
        return text + "  ✓ confirmed"
    return text + ("  (one seed)" if int(r["n_seeds"]) < 2 else "  (not confirmed)")


def tradeoff_figure(info: ReportInfo):
    """MosaicML's plot: the baseline's tradeoff curve (seed means, 95 % band) and each recipe's curve."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 5.4))
    fig.subplots_adjust(left=0.085, right=0.985, bottom=0.1, top=0.93)
    ax = fig.subplots()
    ax.set_title("Tradeoff curves: recipes against the baseline (seed means, 95% intervals)", loc="left")
    base, acc_col = info.baseline_points.sort_values(TIME), info.metric
    shown = shown_curves(info)
    if base.empty and shown.empty:
        _empty(ax, "no baseline and no recipe curve yet" if info.completed.empty
               else "no tradeoff curve yet: the baseline has not completed")
        return fig
    curve_points = [info.points[info.points["recipe_key"] == key].sort_values("budget") for key in shown["recipe_key"]]
    everything = [base, *curve_points]
    times = np.concatenate([_col(p, c) for p in everything for c in (TIME, "train_seconds_ci_low",
                                                                       "train_seconds_ci_high")])
    accs = np.concatenate([_col(p, c) for p in everything for c in (acc_col, "accuracy_ci_low", "accuracy_ci_high")])
    _seconds_axis(ax, times, always_log=True)
    log = ax.get_xscale() == "log"
    ax.set_xlim(*_limits(times, log, 0.15, 0.2))
    ax.set_ylim(*_limits(accs, False, 0.08, 0.12))
    ax.set_ylabel(f"{_acc_label(info)}, mean over seeds")
    _pct(ax)
    if len(base):
        t, a = base[TIME].to_numpy(float), base[acc_col].to_numpy(float)
        low, high = _col(base, "accuracy_ci_low"), _col(base, "accuracy_ci_high")
        if len(low) == len(base) and np.isfinite(low).any():
            ax.fill_between(t, np.where(np.isfinite(low), low, a), np.where(np.isfinite(high), high, a),
                            color=BASE, alpha=0.12, linewidth=0, zorder=2, label="baseline 95% band")
        seeds = int(base["n_seeds"].min()) if "n_seeds" in base else 1
        ax.plot(t, a, "s-", color=BASE, ms=5, lw=1.6, zorder=4,
                label=f"baseline (mean of {seeds}+ seeds)" if seeds >= 2 else "baseline (one seed per budget)")
        _error_bars(ax, base, acc_col, BASE, zorder=4, alpha=0.5)
        for x, y, b in zip(t, a, base["budget"], strict=True):
            ax.annotate(_budget_text(b), (x, y), xytext=(4, -10), textcoords="offset points", fontsize=7, color=BASE)
    colors = iter(CURVE_COLORS)
    for (_, r), pts in zip(shown.iterrows(), curve_points, strict=True):
        confirmed = bool(r["confirmed"])
        color = next(colors, TRIAL)
        style = {"lw": 2.2, "ls": "-", "alpha": 1.0, "ms": 6} if confirmed else \
            {"lw": 1.2, "ls": "--", "alpha": 0.6, "ms": 4.5}
        ax.plot(pts[TIME], pts[acc_col], marker="o", color=color, zorder=6 if confirmed else 5,
                label=_plain(_curve_label(r)), **style)
        _error_bars(ax, pts, acc_col, color, zorder=6 if confirmed else 5, alpha=0.9 if confirmed else 0.5)
        for _, p in pts.iterrows():
            ax.annotate(_budget_text(p["budget"]), (p[TIME], p[acc_col]), xytext=(4, 5), textcoords="offset points",
                        fontsize=7, color=color, alpha=style["alpha"])
    h = info.headline
    if h.number is not None and np.isfinite(h.baseline_seconds) and np.isfinite(h.recipe_seconds):
        ax.axhline(h.baseline_accuracy, color=BASE, lw=0.7, ls=":", zorder=1)
        ax.annotate("", xy=(h.recipe_seconds, h.baseline_accuracy), xytext=(h.baseline_seconds, h.baseline_accuracy),
                    arrowprops={"arrowstyle": "->", "color": GOOD, "lw": 1.8}, zorder=7)
    if shown.empty:  # say so, rather than leave the reader looking for curves that are not there
        ax.text(0.98, 0.04, "no recipe was trained at two or more budgets: no curve to compare with the baseline's",
                transform=ax.transAxes, ha="right", va="bottom", fontsize=9, color="#6b7280")
        ax.legend(loc="upper left")
    else:
        title = None if shown["confirmed"].any() else "no recipe curve is confirmed faster than the baseline's"
        ax.legend(loc="lower right", title=title, title_fontsize=8)
    return fig


def hypervolume_figure(info: ReportInfo):
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(9, 3.6))
    fig.subplots_adjust(left=0.085, right=0.985, bottom=0.15, top=0.86, wspace=0.18)
    left, right = fig.subplots(1, 2)
    hv = info.hv_history
    title = "Hypervolume"
    if np.isfinite(info.reference).all():
        ref = ", ".join(f"{o} {v:.4g}" for o, v in zip(info.objectives, info.reference, strict=True))
        title += f" (reference point: {ref})"
    fig.suptitle(title, x=0.01, ha="left", fontsize=10, fontweight="bold")
    if hv.empty or not np.isfinite(hv["hypervolume"]).any():
        _empty(left, "no completed trials yet")
        _empty(right, "")
        return fig
    left.step(hv["number"], hv["hypervolume"], where="post", color=FRONT, lw=1.6)
    left.scatter(hv["number"], hv["hypervolume"], s=8, color=FRONT, zorder=3)
    left.set_xlabel("trial number")
    left.xaxis.set_major_locator(MaxNLocator(integer=True))
    left.set_ylabel("hypervolume")
    right.step(hv["cumulative_seconds"], hv["hypervolume"], where="post", color="#d97706", lw=1.6)
    right.scatter(hv["cumulative_seconds"], hv["hypervolume"], s=8, color="#d97706", zorder=3)
    right.set_xlabel("cumulative training time (s)")
    for ax in (left, right):
        ax.set_ylim(bottom=0)
    return fig


def effects_figure(info: ReportInfo):
    from matplotlib.figure import Figure

    eff = info.effects
    n = len(eff)
    fig = Figure(figsize=(9, max(2.4, 1.2 + 0.3 * n)), layout="constrained")
    axes = fig.subplots(1, 3, sharey=True)
    if eff.empty:
        for ax in axes:
            _empty(ax, "")
        axes[1].text(0.5, 0.5, "no algorithms were tried", ha="center", va="center", transform=axes[1].transAxes,
                     color="#6b7280", fontsize=11)
        return fig
    eff = eff.iloc[::-1]  # first algorithm on top
    y = np.arange(n)
    names = [_plain(_short(a, 28)) for a in eff["algorithm"]]
    acc = eff["acc_diff_budget_matched"].to_numpy(float)
    acc = np.where(np.isfinite(acc), acc, eff["acc_diff"].to_numpy(float)) * 100
    thr = (eff["throughput_ratio"].to_numpy(float) - 1) * 100

    def bars(ax, values, title, unit):
        v = np.nan_to_num(values)
        ax.barh(y, v, color=[GOOD if x >= 0 else BAD for x in v], height=0.6)
        ax.axvline(0, color="#6b7280", lw=0.8)
        ax.set_title(title, loc="left", fontsize=9)
        ax.set_xlabel(unit)
        for yi, x, raw in zip(y, v, values, strict=True):
            ax.text(x, yi, f" {raw:+.2f} " if np.isfinite(raw) else " n/a ", va="center",
                    ha="left" if x >= 0 else "right", fontsize=7, color="#374151")
        ax.margins(x=0.3)

    split = "Val accuracy" if info.selection.on_val else "Accuracy"
    bars(axes[0], acc, f"{split} effect (budget-matched)", "percentage points")
    bars(axes[1], thr, "Throughput change", "% images/s vs without")
    share_all = eff["share_completed"].to_numpy(float) * 100
    share_front = eff["share_front"].to_numpy(float) * 100
    axes[2].barh(y + 0.18, np.nan_to_num(share_front), height=0.34, color=FRONT, label="on the frontier")
    axes[2].barh(y - 0.18, np.nan_to_num(share_all), height=0.34, color=TRIAL, label="all completed")
    axes[2].set_title("Share of trials using it", loc="left", fontsize=9)
    axes[2].set_xlabel("% of trials")
    axes[2].set_xlim(0, 105)
    fig.legend(loc="outside lower right", ncols=2, fontsize=7.5)
    axes[0].set_yticks(y, names)
    for ax in axes:
        ax.grid(axis="y", visible=False)
        ax.set_axisbelow(True)
    return fig


_FIGURES = {
    "pareto": pareto_figure,
    "tradeoff": tradeoff_figure,
    "budget_curves": budget_curves_figure,
    "hypervolume": hypervolume_figure,
    "effects": effects_figure,
}


def _render(fig) -> Plot:
    svg, png = io.BytesIO(), io.BytesIO()
    fig.savefig(svg, format="svg", metadata={"Date": None})
    fig.set_layout_engine("none")  # keep the layout just computed: it is a third of the drawing time
    fig.savefig(png, format="png", dpi=PNG_DPI, facecolor="white")
    return Plot(svg.getvalue().decode("utf-8"), png.getvalue())


def render_plots(info: ReportInfo) -> dict[str, Plot]:
    """Every figure of the report, rendered in memory (name -> SVG text and PNG bytes)."""
    import matplotlib

    with matplotlib.rc_context(_RC):
        return {name: _render(make(info)) for name, make in _FIGURES.items()}


def write_plots(plots: dict[str, Plot], run_dir: str | Path) -> list[Path]:
    folder = Path(run_dir) / "plots"
    paths = []
    for name, plot in plots.items():
        paths.append(write_atomic(folder / f"{name}.svg", plot.svg))
        paths.append(write_atomic(folder / f"{name}.png", plot.png))
    return paths
