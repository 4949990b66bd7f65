"""Recipe search: Optuna multi-objective samplers over a ``SearchSpace``, trials run on Ray Tune.

Kept import-free so ``import recipesearch.search.samplers`` does not pull in Ray. The package itself is
callable, ``recipesearch.search(space, out=...)``: once any submodule is imported, the attribute
``recipesearch.search`` is this package, so the package must behave as the API function too.
"""
from __future__ import annotations

import sys
import types


class _CallableModule(types.ModuleType):
    def __call__(self, *args, **kwargs):
        from recipesearch.search.api import search

        return search(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
