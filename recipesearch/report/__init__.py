"""The report of a search run: one ``ReportInfo``, then pareto.csv, recipes/, plots/ and index.html.

``build_report(run_dir)`` is what ``recipesearch search`` calls every few trials and at the end, and what
``recipesearch report RUN_DIR`` runs: it reads only the stored files (trials.csv, run.json, space.yaml),
so a report can be rebuilt at any time. Every file is written atomically.
"""
from __future__ import annotations

from pathlib import Path

from recipesearch.report.info import FrontRecipe, Headline, ReportInfo, RunFiles, build_info, load_run

__all__ = ["FrontRecipe", "Headline", "ReportInfo", "RunFiles", "build_info", "build_report", "export_recipes",
           "load_run", "write_report"]  # fmt: skip


def build_report(run_dir: str | Path) -> Path:
    """Rebuild everything from the stored trials of ``run_dir``; returns the path of index.html."""
    return write_report(build_info(*load_run(run_dir), run_dir=run_dir), run_dir)


def write_report(info: ReportInfo, run_dir: str | Path) -> Path:
    """Render an already computed ``ReportInfo`` into ``run_dir``; returns the path of index.html."""
    from recipesearch.report.export import pareto_csv_text, unique_recipes, write_recipes
    from recipesearch.report.html import render_html
    from recipesearch.report.plots import render_plots, write_plots
    from recipesearch.rundir import RunDir, write_atomic

    # Every target checked and everything rendered in memory first: a report that fails leaves the
    # previous one as it was, never half of a new one.
    run_dir, out = Path(run_dir), RunDir(run_dir)
    recipes = [f"recipes/{r.recipe_id}.yaml" for r in unique_recipes(info)]
    out.check_outputs(["pareto.csv", "index.html", *recipes], ["recipes", "plots"] if recipes else ["plots"])
    pareto = pareto_csv_text(info)
    plots = render_plots(info)
    out.check_outputs([f"plots/{name}.{ext}" for name in plots for ext in ("svg", "png")])
    page = render_html(info, plots)
    write_atomic(run_dir / "pareto.csv", pareto)
    write_recipes(info, run_dir)
    write_plots(plots, run_dir)
    return write_atomic(run_dir / "index.html", page)


def export_recipes(run_dir: str | Path, to_dir: str | Path, force: bool = False) -> list[Path]:
    """Copy the frontier recipes of ``run_dir`` into ``to_dir`` (see ``recipesearch.report.export``)."""
    from recipesearch.report.export import export_recipes as _export

    return _export(run_dir, to_dir, force=force)
