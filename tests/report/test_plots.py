"""The report's figures: what they say when there is little to draw, and the seed intervals they draw."""
from __future__ import annotations

import dataclasses

import pytest
from matplotlib.container import ErrorbarContainer

from recipesearch.report import build_info, load_run
from recipesearch.report.curve_plots import budget_curves_figure, tradeoff_figure
from recipesearch.report.pareto_plot import pareto_figure

from .fake_run import CONFIRMED_NUMBER, SEARCH_ROWS, trials_frame


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def _legend(fig) -> list[str]:
    return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


@pytest.fixture
def info(run_dir):
    return build_info(*load_run(run_dir), run_dir=run_dir)


def test_budget_curves_say_when_only_the_baseline_has_a_curve(info):
    assert len(info.budget_curves) and len(info.baseline)
    assert not any("no recipe besides the baseline" in t for t in _texts(budget_curves_figure(info)))
    only_base = dataclasses.replace(info, budget_curves=info.budget_curves.iloc[0:0])
    fig = budget_curves_figure(only_base)
    assert any("no recipe besides the baseline" in t for t in _texts(fig))
    assert _legend(fig) == ["baseline"]


def test_pareto_plot_draws_seed_intervals(info):
    fig = pareto_figure(info)
    bars = [c for c in fig.axes[0].containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 2  # the baseline's points and the frontier's, each over 3 seeds
    assert "95% CI over seeds" in _legend(fig)
    assert any(name.startswith("2.00× faster [95% CI ") for name in _legend(fig))
    single = build_info(trials_frame(SEARCH_ROWS), {}, "")
    fig = pareto_figure(single)
    assert not [c for c in fig.axes[0].containers if isinstance(c, ErrorbarContainer)]  # one seed: no interval
    assert "frontier (single runs)" in _legend(fig)


def test_tradeoff_curves_show_the_baseline_band_and_each_recipe_curve(info):
    fig = tradeoff_figure(info)
    ax = fig.axes[0]
    names = _legend(fig)
    assert ax.get_xscale() == "log"
    assert names[:2] == ["baseline 95% band", "baseline (mean of 3 seeds)"]
    confirmed = [n for n in names if n.endswith("✓ confirmed")]
    assert len(confirmed) == 1 and confirmed[0].startswith(f"trial {CONFIRMED_NUMBER}: label_smoothing  2.00× [95% CI ")
    assert sum(n.endswith("(one seed)") for n in names) == 2  # the two single-seed curves, drawn dashed
    assert ax.get_legend().get_title().get_text() == ""


def test_the_baseline_legend_names_its_one_seed_budgets():
    """``baseline.seeds_elsewhere``: 3 seeds where the target is read, one elsewhere (the legend said 'one seed per
    budget', from the fewest)."""
    import pandas as pd

    from recipesearch.report.curve_plots import seeds_text

    def text(budgets, seeds):
        return seeds_text(pd.DataFrame({"budget": budgets, "n_seeds": seeds}))

    assert text([0.25, 0.5, 1.0], [1, 3, 3]) == "3 seeds a budget, 1 at ×0.25"
    assert text([0.5, 1.0, 2.0], [2, 3, 1]) == "3 seeds a budget, 2 at ×0.5, 1 at ×2"
    assert text([0.5, 1.0], [1, 1]) == "one seed per budget"


def test_tradeoff_curves_when_there_is_little_to_draw(info):
    single = build_info(trials_frame(SEARCH_ROWS), {}, "")
    fig = tradeoff_figure(single)
    assert "no recipe curve is confirmed" in fig.axes[0].get_legend().get_title().get_text()
    assert "baseline (one seed per budget)" in _legend(fig)
    no_curves = dataclasses.replace(info, recipe_curves=info.recipe_curves.iloc[0:0])
    assert any("no recipe was trained at two or more budgets" in t for t in _texts(tradeoff_figure(no_curves)))
    empty = build_info(trials_frame().iloc[0:0], {}, "")
    assert _texts(tradeoff_figure(empty)) == ["no baseline and no recipe curve yet"]
    no_base = build_info(trials_frame()[lambda d: ~d["is_baseline"]], {}, "")
    assert any("the baseline has not completed" in t for t in _texts(tradeoff_figure(no_base)))
