"""Every method of a space applied to the model it will train, once, before the first trial.

A method that cannot apply to the model (blurpool on a model without a strided conv, stochastic depth without
residual blocks, patch whitening on a grouped stem, a crop wider than the images ...) refuses at the trainer's
start-up with a ``ConfigError``: in a search that is a FAILed trial, which teaches the sampler nothing, so it
proposes the method again and again (9 of 25 proposals on a ConvMixer). Here the driver builds the start of
the base recipe, then of the base with each candidate method switched on (``space.complete``: its
hyperparameters at their in-space start), on the CPU and without training a step: the same model construction
and INIT surgery a trial runs (``train.loop.initial_state``; not the optimizer, whose first construction imports
torch's compiler, seconds a search need not pay here). A base recipe that fails is refused as it is; every
method that fails is named, with its reason, in one line (exit 2): the space must be edited, never silently
narrowed.

Methods whose refusal depends on the device the trials train on (``DEVICE_BOUND``) are only checked where the
trials train on the CPU too. Forbidden pairs need no check here: the sampler never switches on both
(``space.suggest``), and a method forbidden beside one every trial has is refused when the space loads.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from recipesearch.errors import ConfigError

if TYPE_CHECKING:
    from recipesearch.recipe import Recipe
    from recipesearch.space import SearchSpace

DEVICE_BOUND = frozenset({"torch_compile"})  # compile_problem() asks the device's toolchain


def _start(recipe: Recipe, data: object) -> None:
    """``recipe``'s start on the CPU: its model built for the data and its methods' INIT surgery applied."""
    import torch

    from recipesearch.train.loop import initial_state

    initial_state(recipe, data, torch.device("cpu"))


def unfit_methods(space: SearchSpace) -> dict[str, str]:
    """{method: why it cannot apply} for the space's candidate methods on its model; a base recipe that cannot
    start raises its own ``ConfigError``."""
    import torch

    from recipesearch.data import load_data

    base = space.recipe_for(space.complete({}))
    data = load_data(base.data, torch.device("cpu"))
    _start(base, data)  # the baseline itself: its error is the user's to read as it is
    on_cpu = str(space.fixed.get("device", space.base.device)) == "cpu" or space.resources.gpus == 0
    unfit = {}
    for alg in space.algorithms.values():
        if alg.always or alg.in_base or (alg.name in DEVICE_BOUND and not on_cpu):
            continue  # always-on and base methods ran in the baseline's check above
        try:
            _start(space.recipe_for(space.complete({alg.switch: True})), data)
        except ConfigError as exc:
            unfit[alg.name] = exc.message
    return unfit


def check_methods_fit(space: SearchSpace) -> None:
    """Raise one ``ConfigError`` when the base recipe or any candidate method cannot apply to the model."""
    unfit = unfit_methods(space)
    if unfit:
        reasons = "; ".join(f"{name} ({why})" for name, why in unfit.items())
        raise ConfigError("algorithms", f"{len(unfit)} method(s) cannot apply to model {space.base.model.name}: "
                          f"{reasons}. Remove them from the space's algorithms", space.source)
