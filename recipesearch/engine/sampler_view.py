"""What the sampler may learn from: one run per recipe, never the confirmation re-runs.

Repeats of a recipe (the baseline's extra seeds, the confirmation stage's seeds and budgets) are trials of
the same study, so the study, trials.csv and optuna-dashboard hold every run. A sampler told of them
would take three seeds of one recipe as three observations of the same point (TPE's good/bad split and
GP's fit would weigh that point thrice) and the confirmation stage's retraining of the best proposals at
every budget would pull a resumed search towards the recipes already chosen. ``HideRepeats`` wraps any
Optuna sampler and hands it a view of the study without the trials ``keep`` rejects; everything else
(storage, directions, the trial being sampled, NSGA-II's generation attributes) is the study itself. The view
rests on a private Optuna method, so it lives in ``recipesearch/compat.py`` with the other such uses.

After a proposal that repeated a recipe already trained (engine/loop.py answers it without training),
``explore_next`` has the next trial drawn at random: a sampler that ignores pruned trials (GP, NSGA-II)
would otherwise see the same history and propose the same recipe again, spending the trial budget on
repeats. (It is how TPE and GP start anyway: their first trials are random.)
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

from recipesearch.compat import study_without


class HideRepeats(BaseSampler):
    """``inner`` sampling from the study minus the trials ``keep`` rejects."""

    def __init__(self, inner: BaseSampler, keep: Callable[[FrozenTrial], bool], seed: int | None = None):
        self.inner, self.keep = inner, keep
        # a stream of its own: seeded like a random inner sampler, it would draw that sampler's earlier draws again
        self.random = optuna.samplers.RandomSampler(
            seed=None if seed is None else int(np.random.SeedSequence([seed, 1]).generate_state(1)[0]))
        self._explore = False  # the next trial to sample draws at random
        self._exploring: int | None = None  # the number of the trial that does

    def explore_next(self) -> None:
        self._explore = True

    def _random_for(self, trial: FrozenTrial) -> bool:
        return trial.number == self._exploring

    def _view(self, study: optuna.Study) -> optuna.Study:
        return study_without(study, self.keep)

    def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        if self._random_for(trial):
            return {}
        return self.inner.infer_relative_search_space(self._view(study), trial)

    def sample_relative(self, study: optuna.Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        if self._random_for(trial):
            return {}
        return self.inner.sample_relative(self._view(study), trial, search_space)

    def sample_independent(self, study: optuna.Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        if self._random_for(trial):
            return self.random.sample_independent(study, trial, param_name, param_distribution)
        return self.inner.sample_independent(self._view(study), trial, param_name, param_distribution)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        if self._explore:
            self._exploring, self._explore = trial.number, False
        self.inner.before_trial(self._view(study), trial)

    def after_trial(self, study: optuna.Study, trial: FrozenTrial, state: TrialState,
                    values: Sequence[float] | None) -> None:
        self.inner.after_trial(self._view(study), trial, state, values)

    def reseed_rng(self) -> None:
        self.inner.reseed_rng()
        self.random.reseed_rng()

    def __getattr__(self, name: str) -> Any:  # the inner sampler's own attributes (e.g. _rng in tests)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)
