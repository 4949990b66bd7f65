"""recipesearch: find training recipes on the Pareto frontier of accuracy against training time."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["SearchResult", "__version__", "apply", "fit", "load_recipe", "search"]

from recipesearch.engine.api import SearchResult, search  # cheap: Ray, Optuna and torch load inside search()

if TYPE_CHECKING:
    from recipesearch.own_loop import RecipeRun
    from recipesearch.recipe import Recipe
    from recipesearch.train.loop import TrainResult

# Thin wrappers, so ``import recipesearch`` stays cheap: torch loads on first use.


def fit(recipe: Recipe, **kwargs: Any) -> TrainResult:
    """Train one recipe (``recipesearch.train.loop.fit``)."""
    from recipesearch.train.loop import fit as _fit

    return _fit(recipe, **kwargs)


def load_recipe(path: Any, **kwargs: Any) -> Recipe:
    """Load and validate a recipe YAML file (``recipesearch.recipe.load_recipe``)."""
    from recipesearch.recipe import load_recipe as _load

    return _load(path, **kwargs)


def apply(recipe: Any, model: Any, optimizer: Any = None, **kwargs: Any) -> RecipeRun:
    """A recipe's methods in your own training loop (``recipesearch.own_loop.apply``): model surgery now, and a
    ``RecipeRun`` whose calls (``batch``, ``loss``, ``backward``, ``step``, ``eval_model``...) the loop makes."""
    from recipesearch.own_loop import apply as _apply

    return _apply(recipe, model, optimizer, **kwargs)
