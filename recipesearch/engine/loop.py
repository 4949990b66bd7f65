"""The search loop, without Ray: ask → recipe → execute → tell, over one Optuna study.

    prepare: resume → RUNNING trials of a killed driver become FAIL("interrupted") and are queued again;
             the LR sweep of the base recipe is queued (baseline.tune_lr), else the baseline runs: the
             base recipe at every budget x baseline.seeds (the baseline curve is trained first)
    run(executor), stage after stage (user attr ``stage``, engine/study.py):
        tune      the LR sweep; the baseline waits for it, then runs at the LR it chose
        baseline  ... and search: queued baselines first, then proposals, until ``n_trials`` finished
        confirm   once every earlier trial finished: the best proposals again at every budget with
                  more seeds (engine/confirm.py), until all of those finished
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
``Trial.set_user_attr``, ``enqueue_trial``). Repeats of a recipe (extra seeds, confirmation runs) are
hidden from the sampler (engine/sampler_view.py).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import optuna
from optuna.trial import FrozenTrial, TrialState

from recipesearch.analysis.frontier import finite
from recipesearch.engine import study as st
from recipesearch.engine.confirm import EARLIER_STAGES, ConfirmPlan, enqueue_plan, plan_confirmation
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


def outcome(space: SearchSpace, result: dict | None, crash: str | None) -> tuple[dict[str, Any], list[float] | None]:
    """User attrs to store and objective values (None: FAIL) for one trial's last result."""
    result = result or {}
    attrs: dict[str, Any] = {}
    for key in ("accuracy", "val_accuracy", "loss", "train_seconds", "throughput", "data_wait_fraction",
                "wall_seconds", "eval_seconds"):  # eval_seconds: outside train_seconds (flip TTA doubles it)
        if finite(result.get(key)):
            attrs[key] = float(result[key])
    for key in ("threads", "steps"):  # evidence: the torch threads the trial really used
        if finite(result.get(key)):
            attrs[key] = int(result[key])
    # where it ran, and on what (times compare within one hardware class); the device Ray's assignment gave it
    for key in ("node", "hardware", "assigned_device"):
        if result.get(key):
            attrs[key] = str(result[key])
    if isinstance(result.get("gpu_ids"), list):  # the GPUs Ray assigned the trial ([] for none)
        attrs["gpu_ids"] = [i if isinstance(i, int) else str(i) for i in result["gpu_ids"]]
    error = result.get("error") or crash
    if not error and not result:
        error = "the trial reported no result"
    acc = result.get("val_accuracy" if space.metric_split == "val" else "accuracy")
    secs = result.get("train_seconds")
    if not error and not (finite(acc) and finite(secs)):
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


def method_label(recipe: Any, base: Any) -> str:
    """The trial's methods, '+'-joined: its algorithms, and its optimizer where it is not the base recipe's
    (``muon``): a search that switches optimizers must not credit Muon's speed to the algorithms beside it,
    in the frontier's labels or in the per-method effects."""
    names = set(recipe.algorithms)
    if recipe.optimizer.name != base.optimizer.name:
        names.add(recipe.optimizer.name)
    return "+".join(sorted(names))


def _safe_algorithms(space: SearchSpace, params: dict[str, Any]) -> list[str]:
    try:
        return list(space.algorithms_on(params))
    except Exception:  # noqa: BLE001 - only a label for a trial that failed anyway
        return []


class SearchLoop:
    """The ask/tell loop over ``study``; executors call ``ask`` and ``tell`` (see module docstring)."""

    def __init__(self, space: SearchSpace, study: optuna.Study, storage: optuna.storages.BaseStorage,
                 n_trials: int, on_start: Callable[[Proposal], None] | None = None,
                 on_finish: Callable[[FrozenTrial], None] | None = None,
                 on_message: Callable[[str], None] | None = None):
        self.space, self.study, self.storage, self.n_trials = space, study, storage, int(n_trials)
        self.on_start = on_start or (lambda proposal: None)
        self.on_finish = on_finish or (lambda frozen: None)
        self.on_message = on_message or (lambda text: None)
        self.sweep = SweepStrategy(space) if is_sweep(space) else None
        self._sweep_stale = True  # a trial finished since the sweep last proposed
        self.in_flight: dict[int, Proposal] = {}
        self.stop_reason = ""
        self._baselines_queued = False
        self.plan: ConfirmPlan | None = None  # the confirmation stage's, once planned

    # -- before the first ask
    def prepare(self, resuming: bool) -> tuple[int, int]:
        """(interrupted trials queued again, baseline and LR-sweep runs queued)."""
        recovered = (st.recover_interrupted(self.study, self.storage) + st.requeue_lost_workers(self.study)
                     if resuming else 0)
        return recovered, st.ensure_lr_sweep(self.study, self.space) + self._queue_baselines()

    def _queue_baselines(self) -> int:
        """The baseline runs, once the LR sweep (if any) has chosen the LR; 0 while it has not."""
        if self._baselines_queued:
            return 0
        decided, lr = st.tuned_lr(self.trials(), self.space)
        if not decided:
            return 0
        self._baselines_queued = True
        added = st.ensure_baselines(self.study, self.space, lr)
        if lr is not None and added:
            self.on_message(f"LR sweep: the baseline runs at optimizer.lr x{lr:g}")
        return added

    def trials(self) -> list[FrozenTrial]:
        return self.study.get_trials(deepcopy=False)

    def finished(self) -> int:
        return st.count_finished(self.trials())

    def total(self) -> int:
        """Trials this search will have finished at the end: the budget, plus the confirmation runs
        once they are planned."""
        trials = self.trials()
        return self.n_trials + (st.count_finished(trials, [st.CONFIRM]) + self._confirm_left(trials)
                                if self.plan is not None else 0)

    def remaining(self) -> int:
        trials = self.trials()
        left = self.n_trials - st.count_finished(trials, EARLIER_STAGES)
        if left > 0 and not self._search_exhausted(trials):
            return left
        self._plan_confirmation(trials)
        return self._confirm_left(self.trials())

    # -- stages
    def _search_in_flight(self) -> int:
        return sum(1 for p in self.in_flight.values() if p.attrs.get("stage") != st.CONFIRM)

    def _search_exhausted(self, trials: list[FrozenTrial]) -> bool:
        """The sweep has nothing left to propose (the sampled strategies never run out)."""
        if self.sweep is None or st.count_in_state(trials, TrialState.WAITING):
            return False
        if self.sweep.exhausted(st.sweep_history(trials, self.space)):
            self.stop_reason = f"sweep finished after {st.count_finished(trials)} trials: nothing left to try"
            return True
        return False

    def _search_done(self, trials: list[FrozenTrial]) -> bool:
        """Every trial of the earlier stages finished: the budget met (or the sweep out of moves)."""
        if self._search_in_flight():
            return False
        return st.count_finished(trials, EARLIER_STAGES) >= self.n_trials or self._search_exhausted(trials)

    def _plan_confirmation(self, trials: list[FrozenTrial]) -> None:
        """Plan (once per session) and queue the confirmation runs; a resume plans the same ones."""
        if self.plan is not None or not self._search_done(trials):
            return
        self.plan = plan_confirmation(trials, self.space)
        enqueue_plan(self.study, self.plan)
        if self.space.confirm.enabled:
            self.on_message(self.plan.describe())

    def _confirm_left(self, trials: list[FrozenTrial]) -> int:
        return sum(1 for t in trials if st.stage_of(t) == st.CONFIRM
                   and t.state in (TrialState.WAITING, TrialState.RUNNING))

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
        if not self._search_done(trials):
            return False
        self._plan_confirmation(trials)
        return self._confirm_left(self.trials()) == 0

    # -- asking
    def ask(self) -> Proposal | str:
        """The next trial to run, or ``WAIT`` / ``DONE``."""
        trials = self.trials()
        waiting = st.count_in_state(trials, TrialState.WAITING)
        if not self._baselines_queued:
            if self._queue_baselines():
                return self._ask()  # the baseline runs first
            if not self._baselines_queued:  # the LR sweep is still choosing: its runs, or wait for them
                return self._ask() if waiting else (WAIT if self.in_flight else DONE)
        if st.count_finished(trials, EARLIER_STAGES) + self._search_in_flight() < self.n_trials:
            if self.sweep is not None and not waiting:
                queued = self._queue_sweep_moves(trials)
                if queued is not None:
                    if queued == DONE and self._search_done(trials):
                        return self._ask_confirmation(trials)
                    return queued
            return self._ask()
        return self._ask_confirmation(trials)

    def _ask_confirmation(self, trials: list[FrozenTrial]) -> Proposal | str:
        """The confirmation stage: planned once the earlier stages have finished, then run."""
        self._plan_confirmation(trials)
        if self.plan is not None and st.count_in_state(self.trials(), TrialState.WAITING):
            return self._ask()
        return WAIT if self.in_flight else DONE

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
        stage = st.stage_of(trial)
        attrs: dict[str, Any] = {"budget": params.get("budget"), "is_baseline": False, st.STAGE: stage}
        if config["error"] is None:
            # An enqueued trial says whether it is a baseline run; a sampled base recipe is one too.
            known = trial.user_attrs.get("is_baseline")
            attrs["is_baseline"] = bool(known) if known is not None else space.is_baseline(params)
            try:
                recipe = space.recipe_for(params, st.seed_index(trial))
            except ConfigError as exc:
                config["error"] = f"invalid recipe: {exc}"
                attrs["algorithms"] = "+".join(sorted(_safe_algorithms(space, params)))
            else:
                config["recipe"] = recipe.to_dict()
                attrs.update(budget=recipe.budget, epochs=recipe.epochs, seed=recipe.seed,
                             algorithms=method_label(recipe, space.base), recipe_id=recipe.id(),
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
        if crash:  # its worker died (node lost, killed for memory): the executor gave up on this attempt
            attrs[st.WORKER_LOST] = True
            attrs[st.RETRIES] = int(trial.user_attrs.get(st.RETRIES) or 0) + 1
        for key, value in attrs.items():
            trial.set_user_attr(key, value)
        state = TrialState.COMPLETE if values is not None else TrialState.FAIL
        try:
            frozen = self.study.tell(trial, values, state=state)
        except (ValueError, RuntimeError) as exc:  # e.g. a value Optuna rejects: record it, go on
            trial.set_user_attr("error", f"could not record the result: {exc}")
            frozen = self.study.tell(trial, state=TrialState.FAIL)
        if crash:
            self._run_again(frozen, crash)
        self.on_finish(frozen)
        return frozen

    def _run_again(self, frozen: FrozenTrial, reason: str) -> None:
        """A lost worker's run is queued again while the run's worker deaths stay within ``max_failures``.

        Ray Tune's own retries (``note_retry``) do not cover every death: a retry placed on a node that
        is already gone fails while the trial is still PENDING, and Tune ends the trial there. Past the
        limit the FAIL stands (``--resume`` queues it once more, ``study.requeue_lost_workers``).
        """
        deaths = int(frozen.user_attrs.get(st.RETRIES) or 0)
        if deaths > self.space.max_failures or not st.requeue(self.study, frozen):
            return
        self.on_message(f"trial {frozen.number}: {reason}; queued again as a new trial (retry {deaths} of "
                        f"{self.space.max_failures})")

    def note_retry(self, proposal: Proposal, reason: str) -> None:
        """The trial's worker died and the executor starts it again: counted on the (still running) trial."""
        trial = proposal.trial
        retries = int(trial.user_attrs.get(st.RETRIES) or 0) + 1
        trial.set_user_attr(st.RETRIES, retries)
        trial.set_user_attr("retry_reason", reason)
        self.on_message(f"trial {proposal.number}: {reason}; running it again (retry {retries})")

    def interrupt(self, proposal: Proposal) -> FrozenTrial:
        """FAIL("interrupted") and queued again with the same params: it runs once more, later."""
        self.in_flight.pop(proposal.number, None)
        self._sweep_stale = True
        trial = proposal.trial
        trial.set_user_attr("error", st.INTERRUPTED)
        frozen = self.study.tell(trial, state=TrialState.FAIL)
        st.requeue(self.study, frozen)
        self.on_finish(frozen)
        return frozen

    def interrupt_all(self) -> int:
        """Ctrl-C: every trial in flight, and any other RUNNING trial of the study, is queued again."""
        n = len(self.in_flight)
        for proposal in list(self.in_flight.values()):
            self.interrupt(proposal)
        return n + st.recover_interrupted(self.study, self.storage)
