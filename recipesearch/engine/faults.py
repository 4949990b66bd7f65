"""The one place a trial can be made to fail on purpose, for the reliability tests: hooks at a trial's start,
its rung reports and its checkpoints.

A trial passes ``reach(point, config, **info)`` at each of these moments (``engine/trial.py``,
``engine/trainable.py``, ``engine/ranks.py``, and ``engine/executors.py`` for the in-process executor's trials);
``reach`` calls every installed hook with the point, the trial's config and the point's info. Hooks come from
outside the product: a test ships them to the trials as user code (a ``--plugin`` / ``plugins=[...]`` module,
which every trial process imports before it starts: ``engine/shipping.py``) and that module's import installs
them, in the driver and in each Ray worker alike.
With no hook installed, as in every search outside the tests, ``reach`` hands back the config unchanged.

    point         info                        what a hook may do there
    "start"       -                           kill or block the process; return a changed config (the
                                              device a trial trains on)
    "report"      number                      (the hook gets the rung report in place of the config) return the
                                              report with values the test fixes, so what the scheduler decides
                                              follows from them, not from which trial ran faster
    "rung"        rung, step                  block (a test kills the search meanwhile)
    "checkpoint"  checkpoints (this attempt's kill the process right after the k-th checkpoint reached Tune
                  count so far)
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

Point = Literal["start", "report", "rung", "checkpoint"]
# hook(point, config, info) -> None, or at "start" the config the trial goes on with (at "report": the report)
Hook = Callable[[str, dict[str, Any], dict[str, Any]], "dict[str, Any] | None"]

_hooks: list[Hook] = []


def install(hook: Hook) -> None:
    """Call ``hook`` at every point a trial of this process reaches from now on."""
    _hooks.append(hook)


def uninstall(hook: Hook) -> None:
    """Stop calling ``hook`` (a test's hooks end with the test; a Ray worker's end with its process)."""
    if hook in _hooks:
        _hooks.remove(hook)


def reach(point: Point, config: dict[str, Any], **info: Any) -> dict[str, Any]:
    """Run the installed hooks at ``point``; the config to go on with (``config`` itself when none changed it)."""
    for hook in list(_hooks):
        changed = hook(point, config, info)
        if changed is not None:
            config = changed
    return config


def checkpoint_point(config: dict[str, Any]) -> Callable[..., None]:
    """What a trial calls after each checkpoint it wrote (any arguments ignored): passes the "checkpoint" point
    with this attempt's count so far (1 after the first)."""
    written = 0

    def reached(*_: Any) -> None:
        nonlocal written
        written += 1
        reach("checkpoint", config, checkpoints=written)

    return reached
