"""Algorithms registered by name; ``build_algorithms`` turns a recipe's mapping into ordered hooks."""
from __future__ import annotations

from typing import Any

from recipesearch.algorithms.base import Algorithm
from recipesearch.errors import ConfigError

_REGISTRY: dict[str, type[Algorithm]] = {}


def register_algorithm(cls: type[Algorithm]) -> type[Algorithm]:
    if cls.name in _REGISTRY:
        raise ValueError(f"algorithm {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def list_algorithms() -> list[str]:
    return sorted(_REGISTRY)


def get_algorithm(name: str) -> type[Algorithm]:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"algorithms.{name}", f"unknown algorithm; allowed: {', '.join(list_algorithms())}") from None


def build_algorithms(spec: dict[str, dict[str, Any]], recipe: Any = None) -> list[Algorithm]:
    """Instantiate (validating hparams) and check interactions; hooks come back in run order."""
    from recipesearch.algorithms.interactions import check_interactions

    algos = []
    for name, params in spec.items():
        if not isinstance(params, dict):
            raise ConfigError(f"algorithms.{name}", "hyperparameters must be a mapping {name: value}")
        algos.append(get_algorithm(name)(**params))
    check_interactions([a.name for a in algos], recipe)
    return sorted(algos, key=lambda a: (a.order, a.name))
