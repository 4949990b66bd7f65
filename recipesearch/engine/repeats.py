"""A proposal that repeats a recipe the search already trained or is training (the same recipe id: the same
params, budget and seed) is answered without training: with the same seed it would train to the same result.

A sampler proposes a recipe again in a discrete space, when two proposals are asked before either finished,
or when a promotion lands on a recipe already sampled at that budget. The sampler's side of repeats (it never
sees repeated seeds or confirmation runs): engine/sampler_view.py.
"""
from __future__ import annotations

from collections.abc import Sequence

import optuna
from optuna.trial import FrozenTrial, TrialState

from recipesearch.engine import study as st
from recipesearch.engine.confirm import EARLIER_STAGES
from recipesearch.engine.sampler_view import HideRepeats


def same_recipe(trials: Sequence[FrozenTrial], number: int, recipe_id: str) -> FrozenTrial | None:
    """The earlier trial of the search or its baseline with this recipe id, finished or running."""
    for t in trials:
        if t.number != number and t.user_attrs.get("recipe_id") == recipe_id \
                and t.state in (TrialState.COMPLETE, TrialState.RUNNING) and st.stage_of(t) in EARLIER_STAGES:
            return t
    return None


def answer_repeat(study: optuna.Study, trial: optuna.Trial, same: FrozenTrial) -> FrozenTrial:
    """PRUNED at once, costing nothing (train_seconds 0): never on the frontier (the trial it repeats is),
    counted in the trial budget. The next trial samples at random (``HideRepeats.explore_next``): GP and
    NSGA-II ignore pruned trials and would propose the same recipe from the same history again."""
    trial.set_user_attr(st.DUPLICATE_OF, same.number)
    trial.set_user_attr("train_seconds", 0.0)
    trial.set_user_attr(st.PRUNE_REASON, f"the same recipe, budget and seed as trial {same.number} "
                                         f"({same.state.name.lower()}): not trained again")
    frozen = study.tell(trial, state=TrialState.PRUNED)
    if isinstance(study.sampler, HideRepeats):  # the same history would give the same proposal
        study.sampler.explore_next()
    return frozen
