"""Speed-up algorithms: each module holds a pure function plus a hook class registered by name.

Every module in this package is imported here so its ``@register_algorithm`` runs; adding a method is
adding a file.
"""
from __future__ import annotations

import importlib
import pkgutil

from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import build_algorithms, get_algorithm, list_algorithms, register_algorithm

_INFRASTRUCTURE = {"base", "registry", "interactions", "contract"}

for _module in pkgutil.iter_modules(__path__):
    if _module.name not in _INFRASTRUCTURE and not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["Algorithm", "build_algorithms", "get_algorithm", "list_algorithms", "register_algorithm"]
