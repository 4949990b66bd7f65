"""The search loop, without Ray: ask → recipe → execute → tell, over one Optuna study.

    prepare: resume → RUNNING trials of a killed driver become FAIL("interrupted") and are queued again;
             the LR sweep of the base recipe is queued (baseline.tune_lr), else the baseline runs: the
             base recipe at every budget x baseline.seeds (the baseline curve is trained first)
    run(executor), stage after stage (user attr ``stage``, engine/study.py):
        tune      the LR sweep; the baseline waits for it, then runs at the LR it chose
        baseline  ... and search: queued baselines first, then proposals, until ``n_trials`` finished
        confirm   once every earlier trial finished: the best proposals again around the target with
                  more seeds (engine/confirm.py), until all of those finished
        simplify  (``simplify:`` on) once the confirmation finished: the headline recipe without each of its
                  methods, then without those it does not need as a new curve (engine/simplify.py)
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
hidden from the sampler (engine/sampler_view.py). Beside the loop: the attrs it writes (engine/trial_attrs.py),
rungs and promotion (engine/scheduler.py), a proposal repeating a recipe (engine/repeats.py).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import optuna
from optuna.trial import FrozenTrial, TrialState

from recipesearch.engine import queueing, repeats, scheduler, simplify, strict_timing
from recipesearch.engine import study as st
from recipesearch.engine.confirm import EARLIER_STAGES
from recipesearch.engine.confirm_stage import ConfirmStage
from recipesearch.engine.failures import failing_alike, stop_message
from recipesearch.engine.proposal import Proposal
from recipesearch.engine.samplers import SweepStrategy, is_sweep
from recipesearch.engine.search_budget import SearchBudget
from recipesearch.engine.trial_attrs import asked_attrs, outcome
from recipesearch.errors import UserError

if TYPE_CHECKING:
    from recipesearch.space import SearchSpace

POST_STAGES = (st.CONFIRM, st.SIMPLIFY)  # after the search: their runs come on top of ``n_trials``
WAIT = "wait"  # nothing to ask now: what comes next depends on trials in flight
DONE = "done"  # the budget is met (counting trials in flight) or the sweep has nothing left


class Executor(Protocol):
    """Runs proposals: ask the loop until it has nothing to ask, execute each, tell each result."""

    name: str

    def run(self, loop: SearchLoop) -> None: ...


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
        self.confirm = ConfirmStage(space, study, lambda text: self.on_message(text))  # engine/confirm_stage.py
        self.simplify_plan: simplify.SimplifyPlan | None = None  # the simplify stage's latest step
        self._simplify_seen: tuple[int, int] | None = None  # (finished, queued) post-search trials it was planned on
        self.strict_timing = False  # --strict-timing: a trial timed on a busy machine runs again
        self.plugins: dict[str, Any] | None = None  # user code every trial installs first (engine/shipping.py)
        self.budget: SearchBudget | None = None  # --search-budget / --time-budget (engine/search_budget.py)
        self._budget_said = False
        self.warm: tuple[dict[str, Any], ...] = ()  # earlier searches' recipes, proposed first (engine/warm_start.py)

    # -- before the first ask
    def prepare(self, resuming: bool) -> tuple[int, int]:
        """(interrupted trials queued again, baseline and LR-sweep runs queued)."""
        recovered = (queueing.recover_interrupted(self.study, self.storage) + queueing.requeue_lost_workers(self.study)
                     if resuming else 0)
        return recovered, queueing.ensure_lr_sweep(self.study, self.space) + self._queue_baselines()

    def _queue_baselines(self) -> int:
        """The baseline runs, once the LR sweep (if any) has chosen the LR; 0 while it has not."""
        decided, lr = (False, None) if self._baselines_queued else queueing.tuned_lr(self.trials(), self.space)
        if not decided:  # queued already, or the sweep is still choosing
            return 0
        self._baselines_queued = True
        added = queueing.ensure_baselines(self.study, self.space, lr)
        self._queue_warm()
        if lr is not None and added:
            self.on_message(f"LR sweep: the baseline runs at optimizer.lr x{lr:g}")
        return added

    def _queue_warm(self) -> None:
        """The warm start's recipes, right after the baseline, at most half of the proposals (resume-safe)."""
        room = max(0, (self.n_trials - self.space.baseline_runs) // 2)
        runs = [(params, 0) for params in self.warm[:room]]
        added = queueing.enqueue_missing(self.study, runs, EARLIER_STAGES, stage=st.SEARCH, warm_start=True)
        if added:
            self.on_message(f"warm start: {added} recipe(s) of earlier searches proposed first")

    def trials(self) -> list[FrozenTrial]:
        return self.study.get_trials(deepcopy=False)

    def finished(self) -> int:
        return st.count_finished(self.trials())

    def total(self) -> int:
        """Trials this search will have finished at the end: the budget, plus the confirmation and simplify
        runs once they are planned."""
        trials = self.trials()
        return self.n_trials + (st.count_finished(trials, POST_STAGES) + self._post_left(trials)
                                if self.confirm.plan is not None else 0)

    def remaining(self) -> int:
        trials = self.trials()
        left = self.n_trials - st.count_finished(trials, EARLIER_STAGES)
        if left > 0 and not self._search_exhausted(trials):
            return left
        self._plan_post(trials)
        return self._post_left(self.trials())

    # -- stages
    def _search_in_flight(self) -> int:
        return sum(1 for p in self.in_flight.values() if p.attrs.get("stage") not in POST_STAGES)

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
        if self._search_in_flight() or self.confirm.claim_pending(trials):
            return False
        claimed = self._claim_stood(trials)  # first: a claim that stood leaves the plan only its candidates
        return (claimed or st.count_finished(trials, EARLIER_STAGES) >= self.n_trials
                or self._search_exhausted(trials) or self._budget_spent(trials))

    def _claim_stood(self, trials: list[FrozenTrial]) -> bool:
        return self.confirm.claim_stood(trials, st.count_finished(trials, EARLIER_STAGES))

    def _budget_spent(self, trials: list[FrozenTrial]) -> bool:
        """The search budget leaves no room for another proposal (what is queued still runs: the baseline first)."""
        if self.budget is None or st.count_in_state(trials, TrialState.WAITING) or not self._baselines_queued:
            return False
        if not self.budget.proposals_closed(trials):
            return False
        if not self._budget_said:
            self._budget_said = True
            self.on_message(f"{self.budget.describe()}: no more proposals after "
                            f"{st.count_finished(trials, EARLIER_STAGES)} trials; the rest is the confirmation's")
        return True

    def _allowed(self, trials: list[FrozenTrial]) -> float | None:
        """What a search budget leaves the confirmation (None: no budget, or nothing to measure it in yet)."""
        return self.budget.confirm_allowance(trials) if self.budget is not None else None

    def _plan_post(self, trials: list[FrozenTrial]) -> None:
        """The stages after the search: the confirmation (and its second look), then (once it finished) each step
        of the simplify stage. A step is planned again only when a post-search trial finished or was queued since."""
        if self.confirm.queue_early(trials):
            trials = self.trials()  # the last proposal's early runs, and a claim pending on them, before any plan
        if self._search_done(trials):  # planned once per session; a resume plans the same runs
            self.confirm.plan_once(trials, self._allowed(trials))
        trials = self.trials()  # with the confirmation runs just queued
        if self.confirm.check_probe(trials):
            trials = self.trials()
        if self.confirm.plan is None or st.count_unfinished(trials, (st.CONFIRM,)) \
                or self.confirm.look_again(trials, self._allowed(trials)):
            return
        if not self.space.simplify.enabled:
            return
        post = [t for t in trials if st.stage_of(t) in POST_STAGES]
        seen = (sum(map(st.is_finished, post)), len(post))
        if seen == self._simplify_seen:
            return
        self._simplify_seen = seen
        before = self.simplify_plan
        self.simplify_plan = simplify.plan_simplify(trials, self.space)
        added = simplify.enqueue_simplify(self.study, self.simplify_plan)
        if before is None or before.step != self.simplify_plan.step or added:
            self.on_message(self.simplify_plan.describe())

    def _post_left(self, trials: list[FrozenTrial]) -> int:
        return st.count_unfinished(trials, POST_STAGES)

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
        if failing_alike(trials) is not None and not self.in_flight:
            return True  # stopped early (``_next``): every trial so far failed for one reason
        if not self._search_done(trials):
            return False
        self._plan_post(trials)
        return self._post_left(self.trials()) == 0

    # -- asking
    def ask(self) -> Proposal | str:
        """The next trial to run, or ``WAIT`` / ``DONE``. A proposal of a recipe already trained or in training is
        answered on the spot (``repeats.answer_repeat``) and the loop asks again: each such answer is a finished trial
        of the budget, so this ends."""
        while True:
            got = self._next()
            if got is not None:
                return got

    def _next(self) -> Proposal | str | None:
        trials = self.trials()
        reason = failing_alike(trials)
        if reason is not None:  # every trial so far failed for one reason: more would only repeat it
            if not self.stop_reason:
                self.stop_reason = stop_message(reason, st.count_in_state(trials, TrialState.FAIL))
            return WAIT if self.in_flight else DONE
        if self.confirm.check_probe(trials) or self.confirm.queue_early(trials):
            trials = self.trials()  # the runs they queued go first (the probe's verdict: as soon as it finished)
        waiting = st.count_in_state(trials, TrialState.WAITING)
        if not self._baselines_queued:
            if self._queue_baselines():
                return self._ask()  # the baseline runs first
            if not self._baselines_queued:  # the LR sweep is still choosing: its runs, or wait for them
                return self._ask() if waiting else (WAIT if self.in_flight else DONE)
        if st.count_finished(trials, EARLIER_STAGES) + self._search_in_flight() < self.n_trials \
                and not self._budget_spent(trials) and not self._claim_stood(trials):
            if not waiting and self.in_flight and self.confirm.claim_pending(trials):
                return WAIT  # a claim pending may end the search: a proposal beside its runs would be spent for nothing
            if self.sweep is not None and not waiting:
                queued = self._queue_sweep_moves(trials)
                if queued is not None:
                    if queued == DONE and self._search_done(trials):
                        return self._ask_confirmation(trials)
                    return queued
            return self._ask()
        return self._ask_confirmation(trials)

    def _ask_confirmation(self, trials: list[FrozenTrial]) -> Proposal | str | None:
        """The stages after the search (confirmation, simplify): planned once the earlier ones finished, then run."""
        self._plan_post(trials)
        trials = self.trials()
        if (self.confirm.plan is not None or self.confirm.claim_pending(trials)) \
                and st.count_in_state(trials, TrialState.WAITING):
            return self._ask()  # the plan's runs, or before it those of a claim pending
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
            queueing.enqueue(self.study, params)
        if batch:
            return None
        return DONE if not self.in_flight and self.sweep.exhausted(history) else WAIT

    def trial_config(self, trial: optuna.Trial) -> dict[str, Any]:
        """What every trial's config holds before its recipe: number, threads, the user code, checkpoints."""
        config: dict[str, Any] = {"number": trial.number, "recipe": None, "error": None,
                                  "threads": self.space.threads_per_trial}
        if self.plugins:
            config["plugins"] = self.plugins
        if self.space.checkpoint_minutes:
            config["checkpoint_seconds"] = 60.0 * self.space.checkpoint_minutes
            # a re-run of an interrupted or lost trial goes on from its predecessors' latest checkpoint,
            # which the executor finds (engine/checkpoints.py): the trials it re-runs, latest first
            config["resume_of"] = queueing.rerun_chain(self.trials(), trial.user_attrs.get(st.REQUEUED_FROM))
        return config

    def _ask(self) -> Proposal | None:
        """The next queued or sampled trial as a proposal to run; None when it was answered without training."""
        space = self.space
        if space.scheduler.promotes and self._baselines_queued \
                and not st.count_in_state(self.trials(), TrialState.WAITING):
            # a new proposal starts at the cheapest budget; the sampler chooses everything else
            self.study.enqueue_trial({"budget": float(min(space.budgets))})
        trial = self.study.ask()  # pops a queued (WAITING) trial first
        config = self.trial_config(trial)
        try:
            params = space.suggest(trial, (trial.user_attrs.get(st.QUEUED_PARAMS) or {}).get("budget"))
        except Exception as exc:  # noqa: BLE001 - a broken define-by-run walk fails this trial only
            params = dict(trial.params)
            config["error"] = f"invalid parameters: {exc}"
        config["recipe"], config["error"], attrs = asked_attrs(space, trial, params, config["error"])
        stage = attrs[st.STAGE]
        for key, value in attrs.items():
            if value is not None:
                trial.set_user_attr(key, value)
        if stage == st.SEARCH and config["error"] is None:
            # a recipe already trained or in training is not trained again (engine/repeats.py)
            same = repeats.same_recipe(self.trials(), trial.number, attrs["recipe_id"])
            if same is not None:
                frozen = repeats.answer_repeat(self.study, trial, same)
                self._sweep_stale = True
                self.on_finish(frozen)
                return None
        proposal = Proposal(trial, params, config, attrs)
        if config["recipe"] is not None and scheduler.may_stop(space, attrs):
            config.update(rungs=list(space.scheduler.rungs()), rung_split=space.metric_split)
            proposal.on_rung = lambda report: self.report_rung(proposal, report)
        self.in_flight[trial.number] = proposal
        self.on_start(proposal)
        return proposal

    # -- rungs and promotion (the scheduler: engine/scheduler.py, with analysis/rungs.py deciding)
    def report_rung(self, proposal: Proposal, report: dict[str, Any]) -> bool:
        """A trial's report at a rung, stored on it: does it go on? (``scheduler.report_rung``)"""
        return scheduler.report_rung(self.space, self.study, proposal.trial, proposal.attrs, report)

    def _promote(self, frozen: FrozenTrial) -> None:
        """``scheduler: promote``: the best of ``frozen``'s budget queued at the next (``scheduler.promote``)."""
        for number, budget, nxt in scheduler.promote(self.study, self.space, frozen, self.n_trials,
                                                     self._search_in_flight()):
            self.on_message(f"trial {number}: among the best at budget {budget:g}, promoted to budget {nxt:g}")

    # -- telling
    def tell(self, proposal: Proposal, result: dict[str, Any] | None, crash: str | None = None) -> FrozenTrial:
        """Store a finished trial whole: user attrs first, then COMPLETE (values) or FAIL.

        No result and no crash means the trial was stopped before it reported: it is interrupted.
        """
        if not result and not crash:
            return self.interrupt(proposal)
        if result and result.get("pruned") and not crash:
            return self._pruned(proposal, result)
        self.in_flight.pop(proposal.number, None)
        self._sweep_stale = True
        trial = proposal.trial
        attrs, values = outcome(self.space, result, crash)
        if crash:  # its worker died (node lost, killed for memory): the executor gave up on this attempt
            attrs[st.WORKER_LOST] = True
            attrs[st.RETRIES] = int(trial.user_attrs.get(st.RETRIES) or 0) + 1
        busy = strict_timing.busy_attrs(self.trials(), attrs, trial.user_attrs) if self.strict_timing and values \
            else None
        if busy:  # --strict-timing: timed on a busy machine; not a result for the frontier, the same run again
            attrs, values = {**attrs, **busy}, None
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
        elif busy and queueing.requeue(self.study, frozen):
            self.on_message(f"trial {frozen.number}: {busy['error']}; queued again as a new trial")
        elif state == TrialState.COMPLETE and self.space.scheduler.promotes and st.stage_of(frozen) == st.SEARCH:
            self._promote(frozen)
        self.confirm.finished(frozen)
        self.on_finish(frozen)
        return frozen

    def _pruned(self, proposal: Proposal, result: dict[str, Any]) -> FrozenTrial:
        """PRUNED, with its last rung's values (its accuracy on the selection split, its train_seconds so far)
        as user attrs: never on the frontier, which reads COMPLETE trials only."""
        self.in_flight.pop(proposal.number, None)
        self._sweep_stale = True
        for key, value in scheduler.pruned_attrs(self.space, proposal.trial, result).items():
            proposal.trial.set_user_attr(key, value)
        frozen = self.study.tell(proposal.trial, state=TrialState.PRUNED)
        self.on_finish(frozen)
        return frozen

    def _run_again(self, frozen: FrozenTrial, reason: str) -> None:
        """A lost worker's run is queued again while the run's worker deaths stay within ``max_failures``.

        Ray Tune's own retries (``note_retry``) do not cover every death: a retry placed on a node that
        is already gone fails while the trial is still PENDING, and Tune ends the trial there. Past the
        limit the FAIL stands (``--resume`` queues it once more, ``queueing.requeue_lost_workers``).
        """
        deaths = int(frozen.user_attrs.get(st.RETRIES) or 0)
        if deaths > self.space.max_failures or not queueing.requeue(self.study, frozen):
            return
        self.on_message(f"trial {frozen.number}: {reason}; queued again as a new trial (retry {deaths} of "
                        f"{self.space.max_failures})")

    def note_retry(self, proposal: Proposal, reason: str) -> None:
        """The trial's worker died and the executor starts it again: counted on the (still running) trial."""
        retries = int(proposal.trial.user_attrs.get(st.RETRIES) or 0) + 1
        proposal.trial.set_user_attr(st.RETRIES, retries)
        proposal.trial.set_user_attr("retry_reason", reason)
        self.on_message(f"trial {proposal.number}: {reason}; running it again (retry {retries})")

    def interrupt(self, proposal: Proposal) -> FrozenTrial:
        """FAIL("interrupted") and queued again with the same params: it runs once more, later."""
        self.in_flight.pop(proposal.number, None)
        self._sweep_stale = True
        proposal.trial.set_user_attr("error", st.INTERRUPTED)
        frozen = self.study.tell(proposal.trial, state=TrialState.FAIL)
        queueing.requeue(self.study, frozen)
        self.on_finish(frozen)
        return frozen

    def interrupt_all(self) -> int:
        """Ctrl-C: every trial in flight, and any other RUNNING trial of the study, is queued again."""
        n = len(self.in_flight)
        for proposal in list(self.in_flight.values()):
            self.interrupt(proposal)
        return n + queueing.recover_interrupted(self.study, self.storage)
