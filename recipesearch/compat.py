"""Every use of a private Optuna or Ray API, in one place, each checked against the versions it was written for.

recipesearch otherwise uses only public APIs. The two exceptions below have no public equivalent today; each
checks that the private method it relies on still exists with the signature it expects, and
``tests/test_compat.py`` fails on an Optuna or Ray whose private API moved, so an upgrade that breaks one is a
failing test rather than a search that quietly behaves differently. ``TESTED`` is what the suite has passed
on, which pyproject.toml's lower bounds follow.

(One library's file layout, not an API, is relied on elsewhere: ``data/digits.py`` reads scikit-learn's
``digits.csv.gz`` without importing scikit-learn, falling back to ``load_digits`` where the file is gone, and
``tests/data/test_digits.py`` fails on a scikit-learn whose file no longer matches ``load_digits``.)
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Container
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

TESTED = {"optuna": "5.0.0", "ray": "2.60.0"}

# Optuna: samplers read a study's trials through ``Study._get_trials`` (``get_trials`` and ``trials`` call it
# too); overriding it is the one way to show a sampler a study without some trials.
OPTUNA_GET_TRIALS = ("self", "deepcopy", "states", "use_cache")
# Ray Tune: the actor manager hands a failed actor task to this method (engine/ray_tune.py's comment says why
# it is patched).
RAY_ACTOR_TASK_FAILED = ("self", "tracked_actor_task", "exception")


def _parameters(fn: Any) -> tuple[str, ...] | None:
    return None if fn is None else tuple(inspect.signature(fn).parameters)


def optuna_private_api_problem() -> str | None:
    """Why ``study_without`` cannot work on the installed Optuna, or None."""
    found = _parameters(getattr(optuna.Study, "_get_trials", None))
    if found != OPTUNA_GET_TRIALS:
        return (f"optuna {optuna.__version__}: Study._get_trials{found or ' is gone'} is not "
                f"_get_trials{OPTUNA_GET_TRIALS} (recipesearch is tested with optuna {TESTED['optuna']})")
    return None


def ray_private_api_problem() -> str | None:
    """Why ``memory_kills_are_actor_deaths`` cannot patch the installed Ray, or None."""
    import ray
    from ray.air.execution._internal import actor_manager

    method = getattr(actor_manager.RayActorManager, "_actor_task_failed", None)
    found = _parameters(getattr(method, "__wrapped__", method))
    if found != RAY_ACTOR_TASK_FAILED:
        return (f"ray {ray.__version__}: RayActorManager._actor_task_failed{found or ' is gone'} is not "
                f"_actor_task_failed{RAY_ACTOR_TASK_FAILED} (recipesearch is tested with ray {TESTED['ray']})")
    return None


class _StudyView(optuna.Study):
    """The study with some trials left out of every trial list a sampler reads; it shares the study's storage
    and per-thread cache."""

    def __init__(self, study: optuna.Study, keep: Callable[[FrozenTrial], bool]):  # noqa: D107
        self.__dict__.update(study.__dict__)
        self._keep = keep

    def _get_trials(self, deepcopy: bool = True, states: Container[TrialState] | None = None,
                    use_cache: bool = False) -> list[FrozenTrial]:
        return [t for t in super()._get_trials(deepcopy, states, use_cache) if self._keep(t)]


def study_without(study: optuna.Study, keep: Callable[[FrozenTrial], bool]) -> optuna.Study:
    """``study`` as a sampler sees it, minus the trials ``keep`` rejects (engine/sampler_view.py)."""
    problem = optuna_private_api_problem()
    if problem:
        raise RuntimeError(f"{problem}: the sampler would see every trial; install the tested optuna")
    return _StudyView(study, keep)


def memory_kills_are_actor_deaths() -> None:
    """Ray 2.60's Tune ends the whole ``fit`` ("Caught unexpected exception", exit 1) when Ray's memory monitor
    kills a trial's worker: the actor task then fails with ``ray.exceptions.OutOfMemoryError``, which Tune's
    actor manager (ray/air/execution/_internal/actor_manager.py, ``_actor_task_failed``) only expects as a
    ``RayActorError`` or ``RayTaskError``. Handed over as the actor death it is, Tune retries that trial
    (``FailureConfig``) or fails it alone, and the search goes on. Patched once, only where that private
    method exists as expected; a Ray that handles the error itself never sees the wrapper act."""
    import ray
    from ray.air.execution._internal import actor_manager

    original = getattr(actor_manager.RayActorManager, "_actor_task_failed", None)
    if original is None or getattr(original, "memory_kills_are_deaths", False) or ray_private_api_problem():
        return

    def _actor_task_failed(self: Any, tracked_actor_task: Any, exception: Exception) -> Any:
        if isinstance(exception, ray.exceptions.OutOfMemoryError):
            exception = ray.exceptions.RayActorError(error_msg=f"ray.exceptions.OutOfMemoryError: {exception}")
        return original(self, tracked_actor_task, exception)

    _actor_task_failed.memory_kills_are_deaths = True  # type: ignore[attr-defined]
    _actor_task_failed.__wrapped__ = original  # type: ignore[attr-defined]
    actor_manager.RayActorManager._actor_task_failed = _actor_task_failed
