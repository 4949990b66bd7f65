"""The Pareto plot: accuracy against training time, every run, the frontier and the baseline by budget.

Accuracy axes show the metric the search selected on (``info.metric``): the frontier, the baseline curve
and the headline arrow are defined on it, so drawing test accuracy instead would put "frontier" points
below other trials. The axis label names the split.
"""
from __future__ import annotations

import numpy as np

from recipesearch.analysis import interval_text
from recipesearch.report.info import ReportInfo
from recipesearch.report.plot_labels import along_line, place_labels
from recipesearch.report.plot_parts import (
    BASE,
    FRONT,
    GOOD,
    TRIAL,
    accuracy_axis_label,
    axis_limits,
    budget_text,
    empty_axes,
    error_bars,
    float_column,
    has_repeats,
    percent_axis,
    plain,
    seconds_axis,
    shorten,
    speedup_label,
)
from recipesearch.report.point_text import algorithms_label
from recipesearch.trials_columns import TIME

MAX_LABELS = 14  # frontier labels drawn on the Pareto plot (more would overlap)


def pareto_figure(info: ReportInfo):
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    fig = Figure(figsize=(9, 5.4))
    fig.subplots_adjust(left=0.085, right=0.985, bottom=0.1, top=0.93)
    ax = fig.subplots()
    ax.set_title(plain(f"{shorten(info.space_name, 60)}: accuracy vs training time"), loc="left")
    done = info.completed
    if done.empty:
        empty_axes(ax, "no completed trials yet")
        return fig
    acc_col = info.metric
    base, front = info.baseline_points, info.front
    times, accs = done[TIME].to_numpy(float), done[acc_col].to_numpy(float)
    seconds_axis(ax, times)
    log = ax.get_xscale() == "log"
    spans = [front, base]  # the intervals drawn must fit too (a time interval below 0 runs off the edge)
    span_times = np.concatenate([times, *(float_column(p, c) for p in spans
                                          for c in ("train_seconds_ci_low", "train_seconds_ci_high"))])
    ax.set_xlim(*axis_limits(span_times[~(span_times <= 0)], log, 0.2, 0.45 if log else 0.25))
    ax.set_ylim(*axis_limits(np.concatenate([accs, *(float_column(p, c) for p in spans for c in info.metric_interval)]),
                             False, 0.08, 0.12))
    ax.set_ylabel(accuracy_axis_label(info))
    percent_axis(ax)
    ax.scatter(times, accs, s=18, color=TRIAL, alpha=0.5, linewidths=0, label="run (one seed)", zorder=2)
    if len(base):
        ax.plot(base[TIME], base[acc_col], "s--", color=BASE, ms=5, lw=1.2, label="baseline (mean by budget)",
                zorder=3)
        error_bars(ax, base, acc_col, BASE, zorder=3)
    t, a = front[TIME].to_numpy(float), front[acc_col].to_numpy(float)
    right = ax.get_xlim()[1]
    ax.step(np.append(t, right), np.append(a, a[-1]), where="post", color=FRONT, lw=1.4, alpha=0.8, zorder=4)
    error_bars(ax, front, acc_col, FRONT, zorder=4)
    ax.scatter(t, a, s=42, color=FRONT, edgecolors="white", linewidths=0.8,
               label="frontier (seed means)" if info.confirmed_front else "frontier (single runs)", zorder=5)
    h = info.headline
    handles, names = ax.get_legend_handles_labels()
    if has_repeats(front, acc_col) or has_repeats(base, acc_col):
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
        text = shorten(algorithms_label(r["algorithms"], bool(r["is_baseline"])), 36)
        speed = "" if bool(r["is_baseline"]) else speedup_label(r["speedup"], r["speedup_status"])
        labels.append(plain(f"{text}  {speed}" if speed else text))
    stair_x, stair_y = np.repeat(t, 2)[1:], np.repeat(a, 2)[:-1]  # the staircase's corners
    obstacles = np.vstack([np.column_stack([t, a]), base[[TIME, acc_col]].to_numpy(float),
                           along_line(stair_x, stair_y, log),
                           along_line(base[TIME].to_numpy(float), base[acc_col].to_numpy(float), log)])
    if h.number is not None and np.isfinite(h.baseline_seconds) and np.isfinite(h.recipe_seconds):
        # keep labels off the speedup arrow
        arrow_x = np.geomspace(h.recipe_seconds, h.baseline_seconds, 8) if log else \
            np.linspace(h.recipe_seconds, h.baseline_seconds, 8)
        obstacles = np.vstack([obstacles, np.column_stack([arrow_x, np.full(8, h.baseline_accuracy)])])
    placed = place_labels(ax, np.column_stack([t[keep], a[keep]]), labels, 7.5, obstacles, color=FRONT, zorder=6)
    if len(base):
        place_labels(ax, base[[TIME, acc_col]].to_numpy(float), [budget_text(b) for b in base["budget"]], 7,
                     np.empty((0, 2)), placed, color=BASE)
    return fig
