"""recipesearch: find training recipes on the Pareto frontier of accuracy against training time."""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "fit", "load_recipe", "search"]


def __getattr__(name: str):
    # Lazy: ``import recipesearch`` stays cheap; torch, ray and optuna load on first use.
    if name == "fit":
        from recipesearch.train.loop import fit

        return fit
    if name == "load_recipe":
        from recipesearch.recipe import load_recipe

        return load_recipe
    if name == "search":
        import recipesearch.search as search  # a callable package: recipesearch.search(space, out=...)

        return search
    raise AttributeError(name)
