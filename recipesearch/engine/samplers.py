"""Samplers for a search space: Optuna's TPE / NSGA-II / GP / random, and the hand ``sweep`` strategy.

API (the runner depends on this)
--------------------------------
- ``make_sampler(space) -> optuna.samplers.BaseSampler``: tpe (multivariate, group), nsga2, gp, random,
  each seeded with ``space.sampler.seed`` and given the space's sampler options; for ``sweep`` a
  ``RandomSampler`` that fills in once the sweep's proposals run out.
- ``is_sweep(space) -> bool``. The sampler names and the options each takes are
  ``recipesearch.space.SAMPLERS`` / ``SAMPLER_OPTIONS`` (checked when the space is loaded).
- Constraints (when the space has any), either way works:
  a) set the user attr ``trial.set_user_attr("constraints", space.constraints_values(acc, secs))`` before
     ``study.tell``: the sampler's ``ConstraintsFunc`` (passed as ``constraints_func``) reads it;
  b) ``record_constraints(trial, space, acc, secs)``: Optuna 5's ``trial.set_constraint`` per constraint
     (the API that replaces the deprecated ``constraints_func``); the ``ConstraintsFunc`` then adds nothing.
  Values <= 0 are feasible; every sampler (c-TPE, NSGA-II, GP) reads them from ``trial.constraints``.
- ``ladder(p)`` / ``neighbours(p, value, k)``: the sweep's steps for one parameter (``ParamSpec.ladder`` /
  ``ParamSpec.neighbours``: each kind knows its own); ``switched(params, space)``: its switch stage, each
  optional method turned on or off (also the warm start's proposals around an earlier headline).
- ``SweepStrategy(space)``: ``propose(history) -> list[dict]`` and ``exhausted(history) -> bool``.
  ``history``: one dict per trial of the study, ``{"params": dict, "state": "COMPLETE" | "FAIL" |
  "RUNNING" | "WAITING" | "PRUNED", "accuracy": float | None, "train_seconds": float | None}``; include
  trials in flight (for an enqueued WAITING trial the params are ``trial.system_attrs["fixed_params"]``)
  so nothing is proposed twice. Proposals are complete params dicts in ``space.suggest``'s format (feed
  them to ``study.enqueue_trial``); ``[]`` means "nothing new now": exhausted, or waiting for trials in
  flight at every budget (``exhausted`` tells which). Deterministic: a pure function of ``history``.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from recipesearch.errors import ConfigError
from recipesearch.space import ParamSpec, SearchSpace, params_key

if TYPE_CHECKING:
    import optuna

_FINISHED = ("COMPLETE", "FAIL", "PRUNED")


def is_sweep(space: SearchSpace) -> bool:
    return space.sampler.name == "sweep"


CONSTRAINTS_ATTR = "constraints"  # user attr holding space.constraints_values(accuracy, train_seconds)


class ConstraintsFunc:
    """Optuna ``constraints_func`` reading the user attr ``CONSTRAINTS_ATTR``; picklable (Ray may pickle
    the searcher). Optuna calls it before the trial's values are stored, so it cannot use them."""

    def __init__(self, n_constraints: int):
        self.n_constraints = n_constraints

    def __call__(self, trial: optuna.trial.FrozenTrial) -> Sequence[float]:
        if CONSTRAINTS_ATTR in trial.user_attrs:
            return [float(v) for v in trial.user_attrs[CONSTRAINTS_ATTR]]
        if trial.constraints:
            return []  # already set with trial.set_constraint (record_constraints)
        warnings.warn(f"trial {trial.number} has no constraint values; treated as feasible", stacklevel=2)
        return [0.0] * self.n_constraints


def record_constraints(trial: Any, space: SearchSpace, accuracy: float, train_seconds: float) -> None:
    """Store the trial's constraint values (<= 0 feasible) where Optuna 5's samplers read them."""
    for key, value in space.constraint_dict(accuracy, train_seconds).items():
        trial.set_constraint(key, value)


def nsga2_population(trials: int, n_budgets: int) -> int:
    """Default NSGA-II population: about a quarter of the sampled trials, 8 to Optuna's 50.

    Optuna's default of 50 means a search of a few dozen trials never leaves NSGA-II's first generation,
    which is drawn at random (measured in bench/search_efficiency.py: identical to random search)."""
    return max(8, min(50, (trials - n_budgets) // 4))


def make_sampler(space: SearchSpace) -> optuna.samplers.BaseSampler:
    """The Optuna sampler named by ``space.sampler`` (for ``sweep``: the random sampler that fills in)."""
    import optuna

    spec = space.sampler
    opts = dict(spec.options)
    cf = ConstraintsFunc(len(space.constraints)) if space.constraints else None
    try:
        with warnings.catch_warnings():
            # group=True (what conditional spaces need) is experimental; constraints_func is deprecated
            # in Optuna 5 but still the one way a sampler can read constraints stored as a user attr.
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            warnings.simplefilter("ignore", FutureWarning)
            if spec.name == "tpe":
                # multivariate + group: TPE models jointly the parameters that appear together, which is
                # what conditional (define-by-run) algorithm hyperparameters need.
                opts.setdefault("multivariate", True)
                opts.setdefault("group", opts["multivariate"])
                return optuna.samplers.TPESampler(seed=spec.seed, constraints_func=cf, **opts)
            if spec.name == "nsga2":
                opts.setdefault("population_size", nsga2_population(space.trials, len(space.budgets)))
                return optuna.samplers.NSGAIISampler(seed=spec.seed, constraints_func=cf, **opts)
            if spec.name == "gp":
                return optuna.samplers.GPSampler(seed=spec.seed, constraints_func=cf, **opts)
            return optuna.samplers.RandomSampler(seed=spec.seed)
    except (TypeError, ValueError) as exc:
        raise ConfigError("sampler", f"{spec.name}: {exc}", space.source) from None


# ---------------------------------------------------------------------------------------------------------
# The hand procedure behind the published Mild/Medium/Hot recipes, kept as a baseline strategy
# ---------------------------------------------------------------------------------------------------------
def ladder(p: ParamSpec) -> list[Any]:
    """The values the sweep steps through for one parameter, in step order (``ParamSpec.ladder``).

    scale: the multipliers {0.5, 0.71, 1, 1.41, 2} clipped to the range; grid: the grid sorted; range: the
    starting value times those multipliers, clipped (ints rounded); choices: the choices as listed.
    """
    return p.ladder()


def neighbours(p: ParamSpec, value: Any, k: int) -> list[Any]:
    """The values ``k`` steps down and up from ``value`` on the parameter's ladder (those that exist)."""
    return p.neighbours(value, k)


def _state(entry: dict[str, Any]) -> str:
    state = entry.get("state", "")
    return str(getattr(state, "name", state)).upper()


class SweepStrategy:
    """Coordinate search around the incumbent at each budget, the way the published recipes were tuned.

    1) the baseline at each budget; then at each budget, around the incumbent (the best accuracy so far at
    that budget, less train_seconds breaking ties): 2) each parameter one step down and up its 0.5x-2x
    ladder, 3) two steps, 4) each candidate algorithm switched on/off; a stage is tried only when the
    earlier ones hold nothing new. A move is kept only when it beats the incumbent, i.e. becomes the new
    incumbent, and the stages restart around it. A budget waits while it has trials in flight. Proposals
    interleave the budgets; everything follows from ``history`` alone, so the strategy is deterministic
    and survives a resume.
    """

    def __init__(self, space: SearchSpace):
        self.space = space

    def propose(self, history: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        tried = {params_key(h["params"]) for h in history}
        per_budget = []
        for budget in self.space.budgets:
            per_budget.append(self._budget_batch(budget, history, tried))
        out: list[dict[str, Any]] = []  # round robin so a trial cap cuts every budget alike
        for i in range(max((len(b) for b in per_budget), default=0)):
            out += [batch[i] for batch in per_budget if i < len(batch)]
        return out

    def exhausted(self, history: Sequence[dict[str, Any]]) -> bool:
        """Nothing in flight and nothing left to propose."""
        return all(_state(h) in _FINISHED for h in history) and not self.propose(history)

    def incumbent(self, budget: float, history: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
        """The best completed trial at ``budget``: highest accuracy, then least time, then earliest."""
        best, best_key = None, None
        for i, h in enumerate(history):
            acc, secs = h.get("accuracy"), h.get("train_seconds")
            if _state(h) != "COMPLETE" or not _at_budget(h, budget) or acc is None or not math.isfinite(acc):
                continue
            key = (acc, -(secs if secs is not None and math.isfinite(secs) else math.inf), -i)
            if best_key is None or key > best_key:
                best, best_key = h, key
        return best

    def moves(self, incumbent: dict[str, Any]) -> list[list[dict[str, Any]]]:
        """The stages around ``incumbent`` params: one step, two steps, algorithm switches."""
        space = self.space
        stages: list[list[dict[str, Any]]] = []
        for k in (1, 2):
            stage = []
            for p in space.params:
                if p.name in incumbent:
                    stage += [space.complete({**incumbent, p.name: v}) for v in neighbours(p, incumbent[p.name], k)]
            stages.append(stage)
        stages.append([moved for _, moved in switched(incumbent, space)])
        return stages

    def _budget_batch(self, budget: float, history: Sequence[dict[str, Any]], tried: set[str]) -> list[dict[str, Any]]:
        baseline = self.space.baseline_params(budget)
        if params_key(baseline) not in tried:
            return [baseline]
        if any(_at_budget(h, budget) and _state(h) not in _FINISHED for h in history):
            return []  # wait for the trials in flight: the next stage depends on their results
        best = self.incumbent(budget, history)
        if best is None:
            return []  # the baseline failed: nothing to move around
        for stage in self.moves(self.space.complete(best["params"])):
            new, seen = [], set(tried)
            for params in stage:
                key = params_key(params)
                if key not in seen:
                    seen.add(key)
                    new.append(params)
            if new:
                return new
        return []


def switched(params: dict[str, Any], space: SearchSpace) -> list[tuple[str, dict[str, Any]]]:
    """``params`` with each optional method of ``space`` switched, one at a time, as ("without NAME" | "with NAME",
    params); a switch ``space`` cannot make (a method that would form a forbidden pair) is left out."""
    out = []
    for alg in space.algorithms.values():
        if alg.always:
            continue
        on = bool(params.get(alg.switch, False))
        moved = space.complete({**params, alg.switch: not on})
        if moved != params:
            out.append((f"{'without' if on else 'with'} {alg.name}", moved))
    return out


def _at_budget(entry: dict[str, Any], budget: float) -> bool:
    b = entry.get("params", {}).get("budget")
    return isinstance(b, (int, float)) and math.isclose(float(b), budget)
