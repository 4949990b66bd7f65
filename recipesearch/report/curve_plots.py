"""Curves across budgets: the tradeoff curves (MosaicML's plot) and the leading recipes' accuracy vs time.

Both put the baseline's curve (seed means by budget) next to recipes trained at two or more budgets, on
the metric the search selected on; the tradeoff plot adds 95 % intervals and each curve's speedup claim.
"""
from __future__ import annotations

import numpy as np

from recipesearch.analysis import interval_text
from recipesearch.report.info import ReportInfo
from recipesearch.report.plot_parts import (
    BASE,
    CURVE_COLORS,
    GOOD,
    TRIAL,
    accuracy_axis_label,
    axis_limits,
    budget_text,
    empty_axes,
    error_bars,
    float_column,
    percent_axis,
    plain,
    seconds_axis,
    shorten,
)
from recipesearch.report.point_text import algorithms_label
from recipesearch.trials_columns import TIME

MAX_TRADEOFF_CURVES = 6  # recipe curves drawn in the tradeoff-curves plot: confirmed ones first


def budget_curves_figure(info: ReportInfo):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 5))
    fig.subplots_adjust(left=0.085, right=0.985, bottom=0.11, top=0.93)
    ax = fig.subplots()
    ax.set_title("Accuracy vs time across budgets: leading recipes", loc="left")
    curves, base, acc_col = info.budget_curves, info.baseline_points, info.metric
    if curves.empty and base.empty:
        empty_axes(ax, "no recipe was trained at two or more budgets yet")
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
        ax.plot(rows[TIME], rows[acc_col], "-", color=color, lw=1.6, label=plain(shorten(rows["label"].iloc[0], 70)))
        front = rows["on_front"].to_numpy(bool)
        ax.scatter(rows[TIME][front], rows[acc_col][front], s=36, color=color, zorder=5)
        ax.scatter(rows[TIME][~front], rows[acc_col][~front], s=36, facecolors="white", edgecolors=color, zorder=5)
        for _, r in rows.iterrows():
            ax.annotate(budget_text(r["budget"]), (r[TIME], r[acc_col]), xytext=(4, 5), textcoords="offset points",
                        fontsize=7, color=color)
    times = np.concatenate([curves[TIME].to_numpy(float), base[TIME].to_numpy(float)])
    seconds_axis(ax, times)
    ax.set_ylabel(f"{accuracy_axis_label(info)}, mean over seeds")
    percent_axis(ax)
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
    text = f"trial {int(r['number'])}: {shorten(algorithms_label(r['algorithms']), 40)}"
    if np.isfinite(float(r["speedup"])):
        ci = interval_text(r["speedup_ci_low"], r["speedup_ci_high"], dash="–") if int(r["n_seeds"]) >= 2 else ""
        text += f"  {float(r['speedup']):.2f}×{ci}"
    else:
        text += f"  ({str(r['speedup_status']).replace('_', ' ')})"
    if bool(r["confirmed"]):
        return text + "  ✓ confirmed"
    return text + ("  (one seed)" if int(r["n_seeds"]) < 2 else "  (not confirmed)")


def seeds_text(points) -> str:
    """The seeds behind a curve's points in words: 'mean of 3 seeds', 'one seed per budget', or with
    ``baseline.seeds_elsewhere`` '3 seeds a budget, 1 at x0.25'."""
    counts = points["n_seeds"].astype(int).tolist() if "n_seeds" in points else [1]
    most, fewest = max(counts), min(counts)
    if most == fewest:
        return f"mean of {most} seeds" if most >= 2 else "one seed per budget"
    rest = ", ".join(f"{n} at {budget_text(b)}" for b, n in zip(points["budget"], counts, strict=True) if n != most)
    return f"{most} seeds a budget, {rest}"


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
        empty_axes(ax, "no baseline and no recipe curve yet" if info.completed.empty
               else "no tradeoff curve yet: the baseline has not completed")
        return fig
    curve_points = [info.points[info.points["recipe_key"] == key].sort_values("budget") for key in shown["recipe_key"]]
    everything = [base, *curve_points]
    times = np.concatenate([float_column(p, c) for p in everything
                            for c in (TIME, "train_seconds_ci_low", "train_seconds_ci_high")])
    accs = np.concatenate([float_column(p, c) for p in everything
                           for c in (acc_col, *info.metric_interval)])
    seconds_axis(ax, times, always_log=True)
    log = ax.get_xscale() == "log"
    ax.set_xlim(*axis_limits(times, log, 0.15, 0.2))
    ax.set_ylim(*axis_limits(accs, False, 0.08, 0.12))
    ax.set_ylabel(f"{accuracy_axis_label(info)}, mean over seeds")
    percent_axis(ax)
    if len(base):
        t, a = base[TIME].to_numpy(float), base[acc_col].to_numpy(float)
        low, high = (float_column(base, c) for c in info.metric_interval)
        if len(low) == len(base) and np.isfinite(low).any():
            ax.fill_between(t, np.where(np.isfinite(low), low, a), np.where(np.isfinite(high), high, a),
                            color=BASE, alpha=0.12, linewidth=0, zorder=2, label="baseline 95% band")
        paired = info.frontier is not None and info.frontier.paired
        what = "baseline re-run beside the candidates" if paired else "baseline"
        ax.plot(t, a, "s-", color=BASE, ms=5, lw=1.6, zorder=4, label=f"{what} ({seeds_text(base)})")
        early = info.frontier.early_baseline_curve if paired else None
        if early is not None and len(early.times):  # the baseline stage's, for comparison: not measured against
            ax.plot(early.times, early.accuracies, "s:", color=BASE, ms=4, lw=1.1, alpha=0.6, zorder=3,
                    label="baseline stage (early; not compared against)")
        error_bars(ax, base, acc_col, BASE, zorder=4, alpha=0.5)
        for x, y, b in zip(t, a, base["budget"], strict=True):
            ax.annotate(budget_text(b), (x, y), xytext=(4, -10), textcoords="offset points", fontsize=7, color=BASE)
    colors = iter(CURVE_COLORS)
    for (_, r), pts in zip(shown.iterrows(), curve_points, strict=True):
        confirmed = bool(r["confirmed"])
        color = next(colors, TRIAL)
        style = {"lw": 2.2, "ls": "-", "alpha": 1.0, "ms": 6} if confirmed else \
            {"lw": 1.2, "ls": "--", "alpha": 0.6, "ms": 4.5}
        ax.plot(pts[TIME], pts[acc_col], marker="o", color=color, zorder=6 if confirmed else 5,
                label=plain(_curve_label(r)), **style)
        error_bars(ax, pts, acc_col, color, zorder=6 if confirmed else 5, alpha=0.9 if confirmed else 0.5)
        for _, p in pts.iterrows():
            ax.annotate(budget_text(p["budget"]), (p[TIME], p[acc_col]), xytext=(4, 5), textcoords="offset points",
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
