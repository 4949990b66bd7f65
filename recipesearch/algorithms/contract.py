"""The contract every ``Algorithm`` keeps, checked on any class: ours in tests, a user's before a search trains it.

Static part (``static_problems``, in ``_static_contract.py`` so that the registry can check a class without
importing the trainer this module runs; cheap, run whenever an import path names a class): metadata filled in,
events declared as ``Event`` members, a pydantic ``Params`` model whose defaults validate, ``apply``
implemented. Dynamic part (``run_contract``, two 22-step digits runs, about a second on one core): the
method trains to a finite loss, its hooks run only at the events it declares, and two runs of one seed
give bit-identical weights (speedups are measured against seeds, so a method must be reproducible).
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from recipesearch.algorithms._static_contract import static_problems
from recipesearch.algorithms.base import Algorithm
from recipesearch.hooks.events import Event

# The tiny run of the dynamic part: a residual net (blocks to drop, strided convs to blur) at half width.
CONTRACT_MODEL: dict[str, Any] = {"name": "resnet8", "width": 0.5}
CONTRACT_EPOCHS = 0.5  # 22 steps on digits: enough for schedule-driven methods to switch on


@contextmanager
def spy_on(cls: type[Algorithm]) -> Iterator[list[Event]]:
    """Record the event of every ``apply`` call on ``cls`` while the block runs."""
    applied: list[Event] = []
    original = cls.__dict__.get("apply")
    inherited = cls.apply

    def apply(self: Algorithm, event: Event, state: Any) -> None:
        applied.append(event)
        inherited(self, event, state)

    cls.apply = apply  # type: ignore[method-assign]
    try:
        yield applied
    finally:
        if original is None:
            del cls.apply
        else:
            cls.apply = original  # type: ignore[method-assign]


def run_contract(key: str, params: dict[str, Any] | None = None) -> list[str]:
    """Train ``algorithms: {key: params}`` twice on digits; the problems found (empty: the contract holds).

    ``key`` is what a recipe writes: a registered name or an import path."""
    import torch

    from recipesearch.algorithms.registry import get_algorithm
    from recipesearch.recipe import recipe_from_dict
    from recipesearch.train.loop import Trainer

    cls = get_algorithm(key)
    problems = static_problems(cls)
    if problems:
        return problems
    recipe = recipe_from_dict({"model": CONTRACT_MODEL, "data": {"name": "digits"}, "max_duration": CONTRACT_EPOCHS,
                               "batch_size": 32, "threads": 1, "device": "cpu",
                               "algorithms": {key: dict(params or {})}}, source="contract")
    runs = []
    for _ in range(2):
        with spy_on(cls) as applied:
            try:
                trainer = Trainer(recipe)
                result = trainer.fit()
            except Exception as exc:  # noqa: BLE001 - the method's failure is the finding
                first = str(exc).splitlines()[0] if str(exc) else ""
                return [f"a 22-step digits run failed: {type(exc).__name__}: {first}"]
        model = trainer.state.eval_model or trainer.state.model
        runs.append(({k: v.detach().clone() for k, v in model.state_dict().items()}, list(applied), result))
    (weights, applied, result), (weights2, _, _) = runs
    if not applied:
        problems.append("apply never ran in a 22-step run (check `events` and `match`)")
    stray = sorted({str(e) for e in applied} - {str(e) for e in cls.events})
    if stray:
        problems.append(f"apply ran at undeclared event(s) {', '.join(stray)}")
    if not (result.loss == result.loss and abs(result.loss) != float("inf")):
        problems.append(f"the run ended with a non-finite loss ({result.loss})")
    if weights.keys() != weights2.keys() or any(not torch.equal(weights[k], weights2[k]) for k in weights):
        problems.append("two runs of one seed gave different weights (not reproducible)")
    return problems
