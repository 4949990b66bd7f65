"""The user's entries in the model, dataset and algorithm registries: those registered in this process, the
modules of user code in use, and what a module of theirs offers (``recipesearch models --module acme.nets``).

Above the three registries and ``plugins.py``: the registries resolve import paths through ``plugins``, so
what reads all of them back lives here, and ``plugins`` imports none of them. A search ships what this finds
to its trials (``engine/shipping.py``).
"""
from __future__ import annotations

import inspect
import sys
from typing import Any

from recipesearch.plugins import (
    SEP,
    accepted_options,
    import_user_module,
    is_user_object,
    missing_required,
    plugin_modules,
)


def registered_user_entries() -> dict[str, dict[str, Any]]:
    """Entries registered by user code in this process: ``{"model"|"dataset"|"algorithm": {name: object}}``."""
    # Imported when called: the algorithms package imports every built-in method (and torch), which a caller
    # that only ships a search's plugins should not pay for at import.
    from recipesearch.algorithms.registry import registered_algorithms
    from recipesearch.data.registry import registered_loaders
    from recipesearch.models.registry import registered_models

    out: dict[str, dict[str, Any]] = {
        "model": {n: info for n, info in registered_models().items() if is_user_object(info.fn)},
        "dataset": {n: fn for n, fn in registered_loaders().items() if is_user_object(fn)},
        "algorithm": {n: cls for n, cls in registered_algorithms().items() if is_user_object(cls)},
    }
    return {kind: entries for kind, entries in out.items() if entries}


def user_modules(named: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Modules of user code in use: ``named`` (those a space's import paths name), the ``plugins`` of this
    process, and those holding a user's registered entries; ``__main__`` left out (not importable elsewhere:
    its entries travel by value), and so are the standard library's and recipesearch's."""
    modules = dict.fromkeys(named)
    modules.update(dict.fromkeys(plugin_modules()))
    for entries in registered_user_entries().values():
        for obj in entries.values():
            fn = getattr(obj, "fn", obj)
            module = getattr(fn, "__module__", None)
            if module and module != "__main__" and is_user_object(fn):
                modules.setdefault(module, None)
    return [m for m in modules if not _is_stdlib(m) and is_user_object(_Named(m))]


class _Named:
    def __init__(self, module: str):
        self.__module__ = module


def _is_stdlib(module: str) -> bool:
    top = module.split(".")[0]
    return top in sys.stdlib_module_names or top in sys.builtin_module_names


def module_entries(module: str, kind: str) -> list[str]:
    """What ``module`` offers as ``kind``, as a recipe names it: the names its ``register_*`` calls added, then
    the import paths of what it defines that fits (a factory taking the data's three arguments; an
    ``Algorithm`` subclass; for datasets, any public function: nothing else tells a loader apart)."""
    from torch import nn

    from recipesearch.algorithms.base import Algorithm

    before = set(registered_user_entries().get(kind, {}))
    mod = import_user_module(module, "--module")
    after = registered_user_entries().get(kind, {})
    defined_here = {n for n, obj in after.items() if getattr(getattr(obj, "fn", obj), "__module__", None) == module}
    registered = sorted(set(after) - before | defined_here)
    found = []
    for attr, obj in vars(mod).items():
        if attr.startswith("_") or getattr(obj, "__module__", None) != module:
            continue  # imported names are not this module's entries
        if kind == "algorithm":
            fits = isinstance(obj, type) and issubclass(obj, Algorithm) and not inspect.isabstract(obj)
        elif kind == "model":
            options, var_kw = accepted_options(obj)
            fits = callable(obj) and (not isinstance(obj, type) or issubclass(obj, nn.Module)) and (
                var_kw or all(a in options for a in ("num_classes", "in_channels", "image_size")))
        else:  # a loader is a function the tool can call with its options alone (helpers need arguments)
            fits = inspect.isfunction(obj) and not missing_required(obj, {}, ("spec", "root"))
        if fits:
            found.append(f"{module}{SEP}{attr}")
    return [*registered, *sorted(found)]
