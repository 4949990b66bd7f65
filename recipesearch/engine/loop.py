"""The search loop, without Ray: ask → recipe → execute → tell, over one Optuna study.

    prepare: resume → RUNNING trials of a killed driver become FAIL("interrupted") and are queued again;
             the base recipe is queued at every budget (the baseline curve is trained first)
    run(executor), until the budget is met:
        executor.run(loop):        # in-process (tests, replay, small runs) or Ray Tune (executors.py)
            proposal = loop.ask()  # sweep: its next moves are queued first; then study.ask() pops the
                                   # queue or samples; params → validated recipe in the driver
            result = train(proposal.config)
            loop.tell(proposal, result)   # measured numbers + recipe + error as user attrs, then tell
        a round that ended with trials interrupted (Ray shut a trial down) runs again; two rounds
        without one finished trial stop the search

Every finished trial is persisted whole at once: its user attrs (numbers, recipe, error) are written
before ``tell``. An invalid combination of parameters fails in the driver without costing a worker.
The sweep strategy's next stage depends on results, so it proposes only when nothing is queued and a
trial finished since it last proposed. Only Optuna's public API is used (``Study.ask/tell``,
``Trial.set_user_attr``, ``enqueue_trial``).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import optuna
from optuna.trial import FrozenTrial, TrialState

from recipesearch.engine import study as st
from recipesearch.engine.samplers import SweepStrategy, is_sweep
from recipesearch.errors import ConfigError, UserError

if TYPE_CHECKING:
    from recipesearch.space import SearchSpace

WAIT = "wait"  # nothing to ask now: what comes next depends on trials in flight
DONE = "done"  # the budget is met (counting trials in flight) or the sweep has nothing left


@dataclass
class Proposal:
    """One asked trial: what an executor runs (``config``) and what the loop tells back."""

    trial: optuna.Trial
    params: dict[str, Any]
    config: dict[str, Any]  # {"number", "recipe": dict | None, "error": str | None, "threads"}
    attrs: dict[str, Any] = field(default_factory=dict)  # budget, is_baseline, algorithms, recipe_id ...

    @property
    def number(self) -> int:
        return self.trial.number


class Executor(Protocol):
    """Runs proposals: ask the loop until it has nothing to ask, execute each, tell each result."""

    name: str

    def run(self, loop: SearchLoop) -> None: ...


def _finite(x: Any) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def outcome(space: SearchSpace, result: dict | None, crash: str | None) -> tuple[dict[str, Any], list[float] | None]:
    """User attrs to store and objective values (None: FAIL) for one trial's last result."""
    result = result or {}
    attrs: dict[str, Any] = {}
    for key in ("accuracy", "val_accuracy", "loss", "train_seconds", "throughput", "data_wait_fraction",
                "wall_seconds"):
        if _finite(result.get(key)):
            attrs[key] = float(result[key])
    for key in ("threads", "steps"):  # evidence: the torch threads the trial really used
        if _finite(result.get(key)):
            attrs[key] = int(result[key])
    if result.get("node"):
        attrs["node"] = str(result["node"])
    error = result.get("error") or crash
    if not error and not result:
        error = "the trial reported no result"
    acc = result.get("val_accuracy" if space.metric_split == "val" else "accuracy")
    secs = result.get("train_seconds")
    if not error and not (_finite(acc) and _finite(secs)):
        error = f"no finite {space.metric_split} accuracy / train_seconds in the result"
    if error:
        attrs["error"] = str(error)
        return attrs, None
    acc, secs = float(acc), float(secs)
    cost = space.cost(secs)
    if cost is not None:
        attrs["cost"] = float(cost)
    constraints = space.constraints_values(acc, secs)
    if constraints:
        attrs["constraints"] = [float(c) for c in constraints]
    return attrs, [float(v) for v in space.objective_values(acc, secs)]


def _safe_algorithms(space: SearchSpace, params: dict[str, Any]) -> list[str]:
    try:
        return list(space.algorithms_on(params))
    except Exception:  # noqa: BLE001 - only a label for a trial that failed anyway
        return []


class SearchLoop:
    """The ask/tell loop over ``study``; executors call ``ask`` and ``tell`` (see module docstring)."""

    def __init__(self, space: SearchSpace, study: optuna.Study, storage: optuna.storages.BaseStorage,
                 n_trials: int, on_start: Callable[[Proposal], None] | None = None,
                 on_finish: Callable[[FrozenTrial], None] | None = None):
        self.space, self.study, self.storage, self.n_trials = space, study, storage, int(n_trials)
        self.on_start = on_start or (lambda proposal: None)
        self.on_finish = on_finish or (lambda frozen: None)
        self.sweep = SweepStrategy(space) if is_sweep(space) else None
        self._sweep_stale = True  # a trial finished since the sweep last proposed
        self.in_flight: dict[int, Proposal] = {}
        self.stop_reason = ""

    # -- before the first ask
    def prepare(self, resuming: bool) -> tuple[int, int]:
        """(interrupted trials queued again, baselines queued)."""
        recovered = st.recover_interrupted(self.study, self.storage) if resuming else 0
        return recovered, st.ensure_baselines(self.study, self.space)

    def trials(self) -> list[FrozenTrial]:
        return self.study.get_trials(deepcopy=False)

    def finished(self) -> int:
        return st.count_finished(self.trials())

    def remaining(self) -> int:
        return self.n_trials - self.finished()

    # -- the whole search, round after round
    def run(self, executor: Executor) -> None:
        stalled = 0
        while not self._done():
            before = self.finished()
            executor.run(self)
            stalled = stalled + 1 if self.finished() == before else 0
            if stalled >= 2:  # two rounds without a single finished trial: do not spin
                raise UserError("trials keep getting interrupted without a result; see the run directory's "
                                "ray/ folder for Ray's logs")

    def _done(self) -> bool:
        trials = self.trials()
        if st.count_finished(trials) >= self.n_trials:
            return True
        nothing_queued = not st.count_in_state(trials, TrialState.WAITING)
        if self.sweep is not None and nothing_queued and self.sweep.exhausted(st.sweep_history(trials, self.space)):
            self.stop_reason = f"sweep finished after {st.count_finished(trials)} trials: nothing left to try"
            return True
        return False

    # -- asking
    def ask(self) -> Proposal | str:
        """The next trial to run, or ``WAIT`` / ``DONE``."""
        trials = self.trials()
        if st.count_finished(trials) + len(self.in_flight) >= self.n_trials:
            return WAIT if self.in_flight else DONE
        if self.sweep is not None and not st.count_in_state(trials, TrialState.WAITING):
            queued = self._queue_sweep_moves(trials)
            if queued is not None:
                return queued
        return self._ask()

    def _queue_sweep_moves(self, trials: list[FrozenTrial]) -> str | None:
        """Queue the sweep's next moves; None when some were queued, else WAIT or DONE."""
        if not self._sweep_stale:
            return WAIT if self.in_flight else DONE
        self._sweep_stale = False
        history = st.sweep_history(trials, self.space)
        # never queue more than the budget: no WAITING leftovers at the end
        batch = self.sweep.propose(history)[: max(0, self.n_trials - len(history))]
        for params in batch:
            st.enqueue(self.study, params)
        if batch:
            return None
        return DONE if not self.in_flight and self.sweep.exhausted(history) else WAIT

    def _ask(self) -> Proposal:
        space = self.space
        trial = self.study.ask()  # pops a queued (WAITING) trial first
        config: dict[str, Any] = {"number": trial.number, "recipe": None, "error": None,
                                  "threads": space.threads_per_trial}
        try:
            params = space.suggest(trial)
        except Exception as exc:  # noqa: BLE001 - a broken define-by-run walk fails this trial only
            params = dict(trial.params)
            config["error"] = f"invalid parameters: {exc}"
        attrs: dict[str, Any] = {"budget": params.get("budget"), "is_baseline": False}
        if config["error"] is None:
            attrs["is_baseline"] = bool(trial.user_attrs.get("is_baseline")) or space.is_baseline(params)
            try:
                recipe = space.recipe_for(params)
            except ConfigError as exc:
                config["error"] = f"invalid recipe: {exc}"
                attrs["algorithms"] = "+".join(sorted(_safe_algorithms(space, params)))
            else:
                config["recipe"] = recipe.to_dict()
                attrs.update(budget=recipe.budget, epochs=recipe.epochs, seed=recipe.seed,
                             algorithms="+".join(sorted(recipe.algorithms)), recipe_id=recipe.id(),
                             recipe_json=recipe.model_dump_json(exclude_none=True))
        for key, value in attrs.items():
            if value is not None:
                trial.set_user_attr(key, value)
        proposal = Proposal(trial, params, config, attrs)
        self.in_flight[trial.number] = proposal
        self.on_start(proposal)
        return proposal

    # -- telling
    def tell(self, proposal: Proposal, result: dict[str, Any] | None, crash: str | None = None) -> FrozenTrial:
        """Store a finished trial whole: user attrs first, then COMPLETE (values) or FAIL.

        No result and no crash means the trial was stopped before it reported: it is interrupted.
        """
        if not result and not crash:
            return self.interrupt(proposal)
        self.in_flight.pop(proposal.number, None)
        self._sweep_stale = True
        trial = proposal.trial
        attrs, values = outcome(self.space, result, crash)
        for key, value in attrs.items():
            trial.set_user_attr(key, value)
        state = TrialState.COMPLETE if values is not None else TrialState.FAIL
        try:
            frozen = self.study.tell(trial, values, state=state)
        except (ValueError, RuntimeError) as exc:  # e.g. a value Optuna rejects: record it, go on
            trial.set_user_attr("error", f"could not record the result: {exc}")
            frozen = self.study.tell(trial, state=TrialState.FAIL)
        self.on_finish(frozen)
        return frozen

    def interrupt(self, proposal: Proposal) -> FrozenTrial:
        """FAIL("interrupted") and queued again with the same params: it runs once more, later."""
        self.in_flight.pop(proposal.number, None)
        self._sweep_stale = True
        trial = proposal.trial
        trial.set_user_attr("error", st.INTERRUPTED)
        frozen = self.study.tell(trial, state=TrialState.FAIL)
        params = st.rerun_params(frozen)
        if params:
            st.enqueue(self.study, params, **st.requeue_attrs(frozen, frozen.number))
        self.on_finish(frozen)
        return frozen

    def interrupt_all(self) -> int:
        """Ctrl-C: every trial in flight, and any other RUNNING trial of the study, is queued again."""
        n = len(self.in_flight)
        for proposal in list(self.in_flight.values()):
            self.interrupt(proposal)
        return n + st.recover_interrupted(self.study, self.storage)
