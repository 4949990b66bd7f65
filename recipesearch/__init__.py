"""recipesearch: find training recipes on the Pareto frontier of accuracy against training time."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from recipesearch.version import __version__

__all__ = ["SearchResult", "__version__", "apply", "fit", "load_recipe", "replicate", "search"]

from recipesearch.engine.api import SearchResult, replicate, search  # cheap: Ray, Optuna and torch load inside search()

if TYPE_CHECKING:
    from recipesearch.own_loop import RecipeRun
    from recipesearch.recipe import Recipe
    from recipesearch.train.loop import TrainResult

# Thin wrappers, so ``import recipesearch`` stays cheap: torch loads on first use.


def fit(recipe: Recipe | str | os.PathLike[str], **kwargs: Any) -> TrainResult:
    """Train one recipe (``recipesearch.train.loop.fit``): a ``Recipe``, or the path of a recipe YAML file
    (loaded with ``load_recipe``). Anything else is a TypeError naming ``recipe`` (or ``data``)."""
    from recipesearch.recipe import Recipe
    from recipesearch.train.loop import fit as _fit

    if isinstance(recipe, (str, os.PathLike)):
        recipe = load_recipe(recipe)
    elif not isinstance(recipe, Recipe):
        hint = " (a mapping: recipesearch.recipe.recipe_from_dict(it))" if isinstance(recipe, dict) else ""
        raise TypeError(f"recipe: a Recipe (recipesearch.load_recipe(path)) or the path of a recipe YAML file, "
                        f"not {type(recipe).__name__}{hint}")
    data = kwargs.get("data")
    if data is not None:
        from recipesearch.data import DataBundle

        if not isinstance(data, DataBundle):
            raise TypeError(f"data: a DataBundle (recipesearch.data.load_data) or None, not {type(data).__name__}")
    return _fit(recipe, **kwargs)


def load_recipe(path: str | os.PathLike[str], **kwargs: Any) -> Recipe:
    """Load and validate a recipe YAML file (``recipesearch.recipe.load_recipe``); ``path`` must be a str or
    os.PathLike (a TypeError names it), a missing or bad file is a one-line ``UserError``."""
    from recipesearch.errors import UserError
    from recipesearch.recipe import load_recipe as _load

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path: the path of a recipe YAML file (str or os.PathLike), not {type(path).__name__}")
    if not os.fspath(path).strip():
        raise UserError("path: the path of a recipe YAML file is required, not an empty string")
    return _load(path, **kwargs)


def apply(recipe: Any, model: Any, optimizer: Any = None, **kwargs: Any) -> RecipeRun:
    """A recipe's methods in your own training loop (``recipesearch.own_loop.apply``): model surgery now, and a
    ``RecipeRun`` whose calls (``batch``, ``loss``, ``backward``, ``step``, ``eval_model``...) the loop makes."""
    from recipesearch.own_loop import apply as _apply

    return _apply(recipe, model, optimizer, **kwargs)
