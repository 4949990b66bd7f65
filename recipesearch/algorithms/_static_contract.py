"""The static part of the Algorithm contract (``contract.py``): what is wrong with a class as an ``Algorithm``,
found without training it.

The registry runs it whenever an import path names a class. It lives apart from ``contract.py``'s dynamic part,
which trains with ``recipesearch.train.loop``: the loop imports the registry, so the registry must not import
the trainer back.
"""
from __future__ import annotations

import inspect

from pydantic import BaseModel

from recipesearch.algorithms.base import Algorithm
from recipesearch.hooks.events import Event


def static_problems(cls: type[Algorithm]) -> list[str]:
    """What is wrong with ``cls`` as an ``Algorithm``, one short clause each; empty when nothing is."""
    problems = []
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name.strip():
        problems.append("its class attribute `name` must be a non-empty string")
    for attr in ("description", "citation"):
        if not isinstance(getattr(cls, attr, None), str):
            problems.append(f"its class attribute `{attr}` must be a string")
    events = getattr(cls, "events", None)
    if not events or not all(isinstance(e, Event) for e in events):
        problems.append("`events` must be a non-empty set of recipesearch.hooks.Event members")
    if not isinstance(getattr(cls, "order", None), int):
        problems.append("`order` must be an int")
    params = getattr(cls, "Params", None)
    if not (isinstance(params, type) and issubclass(params, BaseModel)):
        problems.append("`Params` must be a pydantic BaseModel")
    else:
        try:
            params()
        except Exception as exc:  # noqa: BLE001 - any failure means the defaults do not validate
            problems.append(f"`Params()` must validate with its defaults ({type(exc).__name__})")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(getattr(cls, "__abstractmethods__", ()))) or "apply"
        problems.append(f"it must implement {missing}")
    if not problems:
        try:
            cls()
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{cls.__name__}() with default params raised {type(exc).__name__}: {exc}")
    return problems
