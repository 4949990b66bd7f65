"""The frontier's replayable recipe files: each point's recipe validated and rendered as YAML.

Each file starts with ``RECIPE_MARKER`` and a provenance header (what was measured, the speedup claims,
where it came from: ``point_text``), so ``recipesearch train FILE`` replays it and a reader knows what
it promised. Export (``report.export``) writes these; a point whose recipe_json cannot be replayed gets
an ``error`` instead of a file.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

from recipesearch.errors import UserError
from recipesearch.plugins import provenance_lines
from recipesearch.report.point_text import curve_line, measured_line, point_speedup_line
from recipesearch.report.selection import Selection

RECIPE_MARKER = "recipesearch frontier recipe"  # first comment line of every exported recipe


@dataclass(frozen=True)
class FrontRecipe:
    """One frontier trial's replayable recipe file (``yaml_text`` is None when ``error`` says why)."""

    number: int
    recipe_id: str | None
    filename: str | None  # relative to the run dir: recipes/<recipe_id>.yaml
    yaml_text: str | None
    error: str | None = None


def front_recipes(
    front: pd.DataFrame, space_name: str, space_hash: str, run_dir: str | None, selection: Selection,
    user_code: list[dict[str, Any]] | None = None,
) -> tuple[FrontRecipe, ...]:
    """Validate each frontier point's recipe_json (its first run's) and render its YAML with provenance."""
    from recipesearch.recipe import dump_recipe, recipe_from_dict
    from recipesearch.version import __version__

    out = []
    for _, row in front.iterrows():
        number = int(row["number"])
        if not row["recipe_json"]:
            out.append(FrontRecipe(number, row["recipe_id"] or None, None, None, "trials.csv has no recipe_json"))
            continue
        try:
            recipe = recipe_from_dict(json.loads(row["recipe_json"]), source=f"trial {number} recipe_json")
        except (json.JSONDecodeError, UserError) as exc:
            out.append(FrontRecipe(number, row["recipe_id"] or None, None, None, f"recipe not replayable: {exc}"))
            continue
        rid = recipe.id()
        header = "\n".join([
            f"{RECIPE_MARKER} {rid}",
            f"trial {number} of search space '{space_name}' (space hash {space_hash})",
            measured_line(row, selection),
            point_speedup_line(row),
            curve_line(row, selection),
            f"run: {run_dir or 'unknown'}",
            *provenance_lines(user_code),
            f"written by recipesearch {__version__}; replay with: recipesearch train {rid}.yaml",
        ])  # fmt: skip
        out.append(FrontRecipe(number, rid, f"recipes/{rid}.yaml", dump_recipe(recipe, header=header)))
    return tuple(out)
