"""The report's figures, rendered from a ``ReportInfo`` with matplotlib's object API (no pyplot state).

Each figure is rendered to SVG (inlined in index.html) and PNG (for slides and READMEs) and written to
``run_dir/plots/<name>.svg|png``. SVG text stays text (``svg.fonttype: none``): small files, selectable
labels, and matplotlib XML-escapes every string it writes, so a name like ``<script>`` is shown, not run.

The figures are drawn by their own modules: ``pareto_plot`` (accuracy vs time, the frontier),
``curve_plots`` (tradeoff curves, curves across budgets) and ``search_plots`` (hypervolume, algorithm
effects), from the shared pieces of ``plot_parts`` and ``plot_labels``.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import NamedTuple

from recipesearch.report.curve_plots import budget_curves_figure, tradeoff_figure
from recipesearch.report.info import ReportInfo
from recipesearch.report.pareto_plot import pareto_figure
from recipesearch.report.search_plots import effects_figure, hypervolume_figure
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
PNG_DPI = 130


class Plot(NamedTuple):
    svg: str
    png: bytes


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
