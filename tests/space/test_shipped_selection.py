"""Every shipped search space selects on a validation split its base recipe names explicitly.

Selecting on test makes the reported test accuracies (and so every speedup) optimistic; an explicit
``data.val_fraction`` in the base keeps the split visible where the recipe is read, not a schema default.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from recipesearch.space import load_space

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "search_spaces").glob("*.yaml"))


def _base_data(path: Path) -> dict:
    """The ``data:`` mapping of a space's base as written: inline, or in the recipe file it names."""
    base = yaml.safe_load(path.read_text())["base"]
    if isinstance(base, str):
        base = yaml.safe_load((path.parent / base).read_text())
    return base["data"]


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_spaces_select_on_an_explicit_validation_split(path: Path) -> None:
    assert yaml.safe_load(path.read_text())["metric_split"] == "val"
    fraction = _base_data(path).get("val_fraction")
    assert fraction is not None and 0 < fraction <= 0.3, f"{path.name}: base data.val_fraction {fraction}"
    space = load_space(path)
    assert space.metric_split == "val" and space.base.data.val_fraction == fraction


def test_digits_recipes_hold_out_the_baselines_split() -> None:
    """The hand-composed Mild/Medium/Hot recipes train on the same images as the baseline they are compared with."""
    recipes = sorted((ROOT / "recipes").glob("digits_*.yaml"))
    fractions = {p.name: yaml.safe_load(p.read_text())["data"].get("val_fraction") for p in recipes}
    assert len(fractions) >= 4 and set(fractions.values()) == {0.3}, fractions
