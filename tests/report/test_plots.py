"""The report's figures: what they say when there is little to draw."""
from __future__ import annotations

import dataclasses

from recipesearch.report import build_info, load_run
from recipesearch.report.plots import budget_curves_figure


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_budget_curves_say_when_only_the_baseline_has_a_curve(run_dir):
    info = build_info(*load_run(run_dir), run_dir=run_dir)
    assert len(info.budget_curves) and len(info.baseline)
    assert not any("no recipe besides the baseline" in t for t in _texts(budget_curves_figure(info)))
    only_base = dataclasses.replace(info, budget_curves=info.budget_curves.iloc[0:0])
    fig = budget_curves_figure(only_base)
    assert any("no recipe besides the baseline" in t for t in _texts(fig))
    assert fig.axes[0].get_legend_handles_labels()[1] == ["baseline"]
