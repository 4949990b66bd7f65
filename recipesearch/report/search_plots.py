"""How the search went: the frontier's hypervolume over trials and compute, and each algorithm's effects."""
from __future__ import annotations

import numpy as np

from recipesearch.report.info import ReportInfo
from recipesearch.report.plot_parts import BAD, FRONT, GOOD, TRIAL, empty_axes, plain, shorten


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
        empty_axes(left, "no completed trials yet")
        empty_axes(right, "")
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
            empty_axes(ax, "")
        axes[1].text(0.5, 0.5, "no algorithms were tried", ha="center", va="center", transform=axes[1].transAxes,
                     color="#6b7280", fontsize=11)
        return fig
    eff = eff.iloc[::-1]  # first algorithm on top
    y = np.arange(n)
    names = [plain(shorten(a, 28)) for a in eff["algorithm"]]
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
