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
    from recipesearch.report.export import changed_files, pareto_csv_text, recipe_files, remove_stale_recipes
    from recipesearch.report.html import render_html
    from recipesearch.report.plots import render_plots
    from recipesearch.report.writing import write_together
    from recipesearch.rundir import RunDir

    # Every target checked and everything rendered in memory first, then written together (report/writing.py):
    # a report that fails (a read-only run directory, a full disk) leaves the previous one as it was, never half
    # of a new one, and is one line naming the path.
    run_dir, out = Path(run_dir), RunDir(run_dir)
    recipes = recipe_files(info, run_dir)
    out.check_outputs(["pareto.csv", "index.html", *(f"recipes/{p.name}" for p in recipes)],
                      ["recipes", "plots"] if recipes else ["plots"])
    pareto = pareto_csv_text(info)
    plots = render_plots(info)
    out.check_outputs([f"plots/{name}.{ext}" for name in plots for ext in ("svg", "png")])
    page = render_html(info, plots)
    files: dict[Path, str | bytes] = {run_dir / "pareto.csv": pareto, **changed_files(recipes)}
    for name, plot in plots.items():
        files[run_dir / "plots" / f"{name}.svg"] = plot.svg
        files[run_dir / "plots" / f"{name}.png"] = plot.png
    files[run_dir / "index.html"] = page  # last: a reader who sees the new page finds its files

    def describe(path: Path, reason: str) -> str:
        return (f"{path}: cannot write the report ({reason}); {run_dir} was left as it was: make it writable, "
                f"or copy it elsewhere and run `recipesearch report` on the copy")

    write_together(files, describe)
    remove_stale_recipes(run_dir, list(recipes))
    return run_dir / "index.html"


def export_recipes(run_dir: str | Path, to_dir: str | Path, force: bool = False,
                   info: ReportInfo | None = None) -> list[Path]:
    """Copy the frontier recipes of ``run_dir`` into ``to_dir`` (see ``recipesearch.report.export``)."""
    from recipesearch.report.export import export_recipes as _export

    return _export(run_dir, to_dir, force=force, info=info)
