"""Algorithms registered by name; ``build_algorithms`` turns a recipe's mapping into ordered hooks."""
from __future__ import annotations

from typing import Any

from recipesearch.algorithms._static_contract import static_problems
from recipesearch.algorithms.base import Algorithm
from recipesearch.errors import ConfigError
from recipesearch.plugins import is_import_path, resolve

_REGISTRY: dict[str, type[Algorithm]] = {}


def register_algorithm(cls: type[Algorithm]) -> type[Algorithm]:
    if cls.name in _REGISTRY:
        raise ValueError(f"algorithm {cls.name!r} registered twice")
    if is_import_path(cls.name):
        raise ValueError(f"algorithm name {cls.name!r}: ':' marks an import path; choose a plain name")
    _REGISTRY[cls.name] = cls
    return cls


def registered_algorithms() -> dict[str, type[Algorithm]]:
    """Every registered class by name (a copy)."""
    return dict(_REGISTRY)


def install_algorithm(name: str, cls: type[Algorithm]) -> None:
    """Register a class received from the driver (``engine/shipping.py``); a name already here is kept."""
    _REGISTRY.setdefault(name, cls)


def list_algorithms() -> list[str]:
    return sorted(_REGISTRY)


def get_algorithm(name: str) -> type[Algorithm]:
    if is_import_path(name):
        return imported_algorithm(name)
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"algorithms.{name}", f"unknown algorithm; allowed: {', '.join(list_algorithms())}, "
                                                "or an import path module:AlgorithmSubclass of your own") from None


def imported_algorithm(path: str) -> type[Algorithm]:
    """The ``Algorithm`` subclass at import path ``path``, its contract's static part checked
    (``algorithms/_static_contract.py``)."""
    field = f"algorithms.{path}"
    cls = resolve(path, field)
    if not (isinstance(cls, type) and issubclass(cls, Algorithm)):
        raise ConfigError(field, f"{path} is a {type(cls).__name__}, not a subclass of "
                                 "recipesearch.algorithms.Algorithm")
    problems = static_problems(cls)
    if problems:
        raise ConfigError(field, f"{path} breaks the Algorithm contract: {problems[0]}")
    return cls


def build_algorithms(spec: dict[str, dict[str, Any]], recipe: Any = None) -> list[Algorithm]:
    """Instantiate (validating hparams) and check interactions; hooks come back in run order."""
    from recipesearch.algorithms.interactions import check_interactions

    algos = []
    for name, params in spec.items():
        if not isinstance(params, dict):
            raise ConfigError(f"algorithms.{name}", "hyperparameters must be a mapping {name: value}")
        cls = get_algorithm(name)
        try:
            algos.append(cls(**params))
        except ConfigError as exc:
            if name == cls.name:
                raise
            # an import path's class names itself: the recipe's key is what the user wrote and must find
            field = exc.field.replace(f"algorithms.{cls.name}", f"algorithms.{name}", 1)
            raise ConfigError(field, exc.message, exc.source, exc.line) from None
    check_interactions([a.name for a in algos], recipe)
    return sorted(algos, key=lambda a: (a.order, a.name))
