"""What the sampler may learn from: one run per recipe, never the confirmation re-runs.

Repeats of a recipe (the baseline's extra seeds, the confirmation stage's seeds and budgets) are trials of
the same study, so the study, trials.csv and optuna-dashboard hold every run. A sampler told of them
would take three seeds of one recipe as three observations of the same point (TPE's good/bad split and
GP's fit would weigh that point thrice) and the confirmation stage's retraining of the best proposals at
every budget would pull a resumed search towards the recipes already chosen. ``HideRepeats`` wraps any
Optuna sampler and hands it a view of the study without the trials ``keep`` rejects; everything else
(storage, directions, the trial being sampled, NSGA-II's generation attributes) is the study itself.
"""
from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState


class _StudyView(optuna.Study):
    """The study with some trials left out of every trial list a sampler reads.

    Optuna's samplers read trials through ``Study._get_trials`` (``get_trials`` and ``trials`` call it
    too), so that is the one method filtered; the view shares the study's storage and per-thread cache.
    """

    def __init__(self, study: optuna.Study, keep: Callable[[FrozenTrial], bool]):  # noqa: D107
        self.__dict__.update(study.__dict__)
        self._keep = keep

    def _get_trials(self, deepcopy: bool = True, states: Container[TrialState] | None = None,
                    use_cache: bool = False) -> list[FrozenTrial]:
        return [t for t in super()._get_trials(deepcopy, states, use_cache) if self._keep(t)]


class HideRepeats(BaseSampler):
    """``inner`` sampling from the study minus the trials ``keep`` rejects."""

    def __init__(self, inner: BaseSampler, keep: Callable[[FrozenTrial], bool]):
        self.inner, self.keep = inner, keep

    def _view(self, study: optuna.Study) -> optuna.Study:
        return _StudyView(study, self.keep)

    def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return self.inner.infer_relative_search_space(self._view(study), trial)

    def sample_relative(self, study: optuna.Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        return self.inner.sample_relative(self._view(study), trial, search_space)

    def sample_independent(self, study: optuna.Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        return self.inner.sample_independent(self._view(study), trial, param_name, param_distribution)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self.inner.before_trial(self._view(study), trial)

    def after_trial(self, study: optuna.Study, trial: FrozenTrial, state: TrialState,
                    values: Sequence[float] | None) -> None:
        self.inner.after_trial(self._view(study), trial, state, values)

    def reseed_rng(self) -> None:
        self.inner.reseed_rng()

    def __getattr__(self, name: str) -> Any:  # the inner sampler's own attributes (e.g. _rng in tests)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)
