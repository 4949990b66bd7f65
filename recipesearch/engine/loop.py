"""The search loop, without Ray: ask → recipe → execute → tell, over one Optuna study.

    prepare: resume → RUNNING trials of a killed driver become FAIL("interrupted") and are queued again;
             the LR sweep of the base recipe is queued (baseline.tune_lr), else the baseline runs: the
             base recipe at every budget x baseline.seeds (the baseline curve is trained first)
    run(executor), stage after stage (user attr ``stage``, engine/study.py):
        tune      the LR sweep; the baseline waits for it, then runs at the LR it chose
        baseline  ... and search: queued baselines first, then proposals, until ``n_trials`` finished
        confirm   once every earlier trial finished: the best proposals again at every budget with
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
hidden from the sampler (engine/sampler_view.py).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import optuna
from optuna.trial import FrozenTrial, TrialState

from recipesearch.analysis.frontier import finite
from recipesearch.engine import queueing, simplify
from recipesearch.engine import study as st
from recipesearch.engine.confirm import EARLIER_STAGES, ConfirmPlan, enqueue_plan, plan_confirmation
from recipesearch.engine.failures import failing_alike, stop_message
from recipesearch.engine.sampler_view import HideRepeats
from recipesearch.engine.samplers import SweepStrategy, is_sweep
from recipesearch.errors import ConfigError, UserError

if TYPE_CHECKING:
    from recipesearch.space import SearchSpace

POST_STAGES = (st.CONFIRM, st.SIMPLIFY)  # after the search: their runs come on top of ``n_trials``
WAIT = "wait"  # nothing to ask now: what comes next depends on trials in flight
DONE = "done"  # the budget is met (counting trials in flight) or the sweep has nothing left


@dataclass
class Proposal:
    """One asked trial: what an executor runs (``config``) and what the loop tells back."""

    trial: optuna.Trial
    params: dict[str, Any]
    config: dict[str, Any]  # {"number", "recipe": dict | None, "error": str | None, "threads"}
    attrs: dict[str, Any] = field(default_factory=dict)  # budget, is_baseline, algorithms, recipe_id ...
    # The executor calls it with each rung's report (``config["rungs"]``); False: stop the trial there.
    on_rung: Callable[[dict[str, Any]], bool] | None = None

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
                "wall_seconds", "eval_seconds", "rung_seconds"):
        # eval_seconds (flip TTA doubles it) and rung_seconds (evaluations at rungs) are outside train_seconds
        if finite(result.get(key)):
            attrs[key] = float(result[key])
    if finite(result.get("checkpoint_seconds")) and result.get("checkpoints"):  # outside train_seconds
        attrs["checkpoint_seconds"] = float(result["checkpoint_seconds"])
    for key in ("checkpoints", "resumes"):  # resumes: segments - 1 (train_seconds sums the segments)
        if finite(result.get(key)) and result[key]:
            attrs[key] = int(result[key])
    if result.get("resumes") and finite(result.get("resume_gap_seconds")):  # lost work + restart, wall clock
        attrs["resume_gap_seconds"] = float(result["resume_gap_seconds"])
    if result.get("resumes") and finite(result.get("resumed_at_step")):  # the steps before it were not trained again
        attrs["resumed_at_step"] = int(result["resumed_at_step"])
    for key in ("threads", "steps"):  # evidence: the torch threads the trial really used
        if finite(result.get(key)):
            attrs[key] = int(result[key])
    # where it ran, and on what (times compare within one hardware class); the device Ray's assignment gave it
    for key in ("node", "hardware", "assigned_device"):
        if result.get(key):
            attrs[key] = str(result[key])
    if result.get("warnings"):  # the trainer's own (a checkpoint it could not go on from, say)
        attrs["warnings"] = str(result["warnings"])[:1000]
    if isinstance(result.get("gpu_ids"), list):  # the GPUs Ray assigned the trial ([] for none)
        attrs["gpu_ids"] = [i if isinstance(i, int) else str(i) for i in result["gpu_ids"]]
    if finite(result.get("workers")) and result["workers"] > 1:  # data-parallel: each rank's node and GPUs
        attrs["workers"] = int(result["workers"])
        for key in ("worker_nodes", "worker_gpu_ids"):
            if isinstance(result.get(key), list):
                attrs[key] = result[key]
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
        self.simplify_plan: simplify.SimplifyPlan | None = None  # the simplify stage's latest step
        self._simplify_seen: tuple[int, int] | None = None  # (finished, queued) post-search trials it was planned on
        self.plugins: dict[str, Any] | None = None  # user code every trial installs first (engine/shipping.py)

    # -- before the first ask
    def prepare(self, resuming: bool) -> tuple[int, int]:
        """(interrupted trials queued again, baseline and LR-sweep runs queued)."""
        recovered = (queueing.recover_interrupted(self.study, self.storage) + queueing.requeue_lost_workers(self.study)
                     if resuming else 0)
        return recovered, queueing.ensure_lr_sweep(self.study, self.space) + self._queue_baselines()

    def _queue_baselines(self) -> int:
        """The baseline runs, once the LR sweep (if any) has chosen the LR; 0 while it has not."""
        if self._baselines_queued:
            return 0
        decided, lr = queueing.tuned_lr(self.trials(), self.space)
        if not decided:
            return 0
        self._baselines_queued = True
        added = queueing.ensure_baselines(self.study, self.space, lr)
        if lr is not None and added:
            self.on_message(f"LR sweep: the baseline runs at optimizer.lr x{lr:g}")
        return added

    def trials(self) -> list[FrozenTrial]:
        return self.study.get_trials(deepcopy=False)

    def finished(self) -> int:
        return st.count_finished(self.trials())

    def total(self) -> int:
        """Trials this search will have finished at the end: the budget, plus the confirmation and simplify
        runs once they are planned."""
        trials = self.trials()
        return self.n_trials + (st.count_finished(trials, POST_STAGES) + self._post_left(trials)
                                if self.plan is not None else 0)

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

    def _plan_post(self, trials: list[FrozenTrial]) -> None:
        """The stages after the search: the confirmation, then (once it finished) each step of the simplify
        stage. A step is planned again only when a post-search trial finished or was queued since."""
        self._plan_confirmation(trials)
        trials = self.trials()  # with the confirmation runs just queued
        if self.plan is None or not self.space.simplify.enabled or st.count_unfinished(trials, (st.CONFIRM,)):
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
        answered on the spot (``_answer_repeat``) and the loop asks again: each such answer is a finished trial
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

    def _ask_confirmation(self, trials: list[FrozenTrial]) -> Proposal | str | None:
        """The stages after the search (confirmation, simplify): planned once the earlier ones finished, then run."""
        self._plan_post(trials)
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
            queueing.enqueue(self.study, params)
        if batch:
            return None
        return DONE if not self.in_flight and self.sweep.exhausted(history) else WAIT

    def _ask(self) -> Proposal | None:
        """The next queued or sampled trial as a proposal to run; None when it was answered without training."""
        space = self.space
        if space.scheduler.promotes and self._baselines_queued \
                and not st.count_in_state(self.trials(), TrialState.WAITING):
            # a new proposal starts at the cheapest budget; the sampler chooses everything else
            self.study.enqueue_trial({"budget": float(min(space.budgets))})
        trial = self.study.ask()  # pops a queued (WAITING) trial first
        config: dict[str, Any] = {"number": trial.number, "recipe": None, "error": None,
                                  "threads": space.threads_per_trial}
        if self.plugins:
            config["plugins"] = self.plugins
        if space.checkpoint_minutes:
            config["checkpoint_seconds"] = 60.0 * space.checkpoint_minutes
            # a re-run of an interrupted or lost trial goes on from its predecessors' latest checkpoint,
            # which the executor finds (engine/checkpoints.py): the trials it re-runs, latest first
            config["resume_of"] = queueing.rerun_chain(self.trials(), trial.user_attrs.get(st.REQUEUED_FROM))
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
        if stage == st.SEARCH and config["error"] is None:
            same = self._same_recipe(trial.number, attrs["recipe_id"])
            if same is not None:
                return self._answer_repeat(trial, same)
        proposal = Proposal(trial, params, config, attrs)
        if space.scheduler.prunes and stage == st.SEARCH and not attrs["is_baseline"] and config["recipe"] is not None:
            config.update(rungs=list(space.scheduler.rungs()), rung_split=space.metric_split)
            proposal.on_rung = lambda report: self.report_rung(proposal, report)
        self.in_flight[trial.number] = proposal
        self.on_start(proposal)
        return proposal

    # -- repeats: a sampler may propose a recipe again (a discrete space; two proposals asked before either
    # finished; a promotion of a recipe already sampled at that budget); with the same seed it would train to the
    # same result, so it is not trained again
    def _same_recipe(self, number: int, recipe_id: str) -> FrozenTrial | None:
        """The earlier trial of the search or its baseline with this recipe id, finished or running."""
        for t in self.trials():
            if t.number != number and t.user_attrs.get("recipe_id") == recipe_id \
                    and t.state in (TrialState.COMPLETE, TrialState.RUNNING) and st.stage_of(t) in EARLIER_STAGES:
                return t
        return None

    def _answer_repeat(self, trial: optuna.Trial, same: FrozenTrial) -> None:
        """PRUNED at once, costing nothing (train_seconds 0): never on the frontier (the trial it repeats is),
        counted in the trial budget. The next trial samples at random (``HideRepeats.explore_next``): GP and
        NSGA-II ignore pruned trials and would propose the same recipe from the same history again."""
        trial.set_user_attr(st.DUPLICATE_OF, same.number)
        trial.set_user_attr("train_seconds", 0.0)
        trial.set_user_attr(st.PRUNE_REASON, f"the same recipe, budget and seed as trial {same.number} "
                                             f"({same.state.name.lower()}): not trained again")
        self._sweep_stale = True
        self.on_finish(self.study.tell(trial, state=TrialState.PRUNED))
        if isinstance(self.study.sampler, HideRepeats):  # the same history would give the same proposal
            self.study.sampler.explore_next()
        return None

    # -- rungs and promotion (the scheduler: analysis/rungs.py decides, the study remembers)
    def report_rung(self, proposal: Proposal, report: dict[str, Any]) -> bool:
        """A trial's report at a rung (``rung``, ``rung_accuracy`` on the selection split, ``train_seconds``
        so far): stored on the trial, then does it go on? Only trials of its budget that reached the same rung
        are compared (MO-ASHA, ``analysis.rungs.decide``); the baseline and confirmation runs always go on."""
        from recipesearch.analysis.rungs import RungRecord, decide

        trial = proposal.trial
        fraction, acc, secs = float(report["rung"]), report.get("rung_accuracy"), report.get("train_seconds")
        if not (finite(acc) and finite(secs)):
            return True  # nothing to rank on: the trial's end will tell
        # a trial resumed from a checkpoint reports again the rungs it passed after that checkpoint: the latest counts
        reported = [r for r in trial.user_attrs.get(st.RUNGS) or [] if r[0] != fraction]
        reported.append([fraction, float(acc), float(secs)])
        trial.set_user_attr(st.RUNGS, reported)
        if not self.space.scheduler.prunes or proposal.attrs.get(st.STAGE) != st.SEARCH \
                or proposal.attrs.get("is_baseline"):  # a sampled base recipe is a baseline run: never stopped
            return True
        me = RungRecord(trial.number, float(proposal.attrs["budget"]), fraction, float(acc), float(secs))
        decision = decide(me, self._rung_records(exclude=trial.number), self.space.scheduler.reduction_factor)
        if not decision.go_on:
            trial.set_user_attr(st.PRUNED_AT, fraction)
            trial.set_user_attr(st.PRUNE_REASON, f"rung {fraction:.3g}: {decision.describe()}")
        return decision.go_on

    def _rung_records(self, exclude: int) -> list[Any]:
        """Every rung report of the search trials still standing (running, finished or stopped): interrupted
        ones are left out, their re-queued copy reports again."""
        from recipesearch.analysis.rungs import RungRecord

        out = []
        for t in self.trials():
            if t.number == exclude or st.stage_of(t) != st.SEARCH or t.state not in (
                    TrialState.RUNNING, TrialState.COMPLETE, TrialState.PRUNED):
                continue
            budget = t.user_attrs.get("budget")
            for fraction, acc, secs in t.user_attrs.get(st.RUNGS) or []:
                if budget is not None:
                    out.append(RungRecord(t.number, float(budget), float(fraction), float(acc), float(secs)))
        return out

    def _promote(self, frozen: FrozenTrial) -> None:
        """``scheduler: promote``: after a search trial finished at one budget, the best ``1/eta`` of the recipes
        finished at that budget are queued at the next budget (``analysis.rungs.promotions``), as many as the
        search's trial budget still has room for (no queued leftovers when it is spent)."""
        from recipesearch.analysis.rungs import promotions

        budgets = sorted(float(b) for b in self.space.budgets)
        budget = frozen.user_attrs.get("budget")
        if budget is None or float(budget) not in budgets or float(budget) == budgets[-1]:
            return
        nxt = budgets[budgets.index(float(budget)) + 1]
        trials = self.trials()
        finished = [(t.number, acc, float(t.user_attrs["train_seconds"])) for t in trials
                    if t.state == TrialState.COMPLETE and st.stage_of(t) == st.SEARCH and st.seed_index(t) == 0
                    and t.user_attrs.get("budget") == budget
                    and finite(acc := st.objective_accuracy(t.user_attrs, self.space))]
        done = {int(t.user_attrs[st.PROMOTED_FROM]) for t in trials if t.user_attrs.get(st.PROMOTED_FROM) is not None}
        waiting = st.count_in_state(trials, TrialState.WAITING)
        room = self.n_trials - st.count_finished(trials, EARLIER_STAGES) - self._search_in_flight() - waiting
        by_number = {t.number: t for t in trials}
        for number in promotions(finished, done, self.space.scheduler.reduction_factor)[: max(0, room)]:
            params = {**st.trial_params(by_number[number]), "budget": nxt}
            if queueing.enqueue_missing(self.study, [(params, 0)], EARLIER_STAGES, stage=st.SEARCH,
                                  is_baseline=False, **{st.PROMOTED_FROM: number}):
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
        elif state == TrialState.COMPLETE and self.space.scheduler.promotes and st.stage_of(frozen) == st.SEARCH:
            self._promote(frozen)
        self.on_finish(frozen)
        return frozen

    def _pruned(self, proposal: Proposal, result: dict[str, Any]) -> FrozenTrial:
        """PRUNED, with its last rung's values (its accuracy on the selection split, its train_seconds so far)
        as user attrs: never on the frontier, which reads COMPLETE trials only."""
        self.in_flight.pop(proposal.number, None)
        self._sweep_stale = True
        trial = proposal.trial
        split_key = "val_accuracy" if self.space.metric_split == "val" else "accuracy"
        rung_values = {k: result[k] for k in ("train_seconds", "rung_eval_seconds", "rung_seconds", "wall_seconds",
                                                "threads", "node", "hardware", "assigned_device", "gpu_ids",
                                                "workers", "worker_nodes", "worker_gpu_ids")
                       if k in result}
        attrs, _ = outcome(self.space, {**rung_values, split_key: result.get("rung_accuracy")}, None)
        attrs.pop("error", None)
        if finite(result.get("rung_eval_seconds")):  # the stopping rung's evaluation (outcome() keeps rung_seconds)
            attrs["rung_eval_seconds"] = float(result["rung_eval_seconds"])
        attrs[st.PRUNED_AT] = float(result.get("rung", trial.user_attrs.get(st.PRUNED_AT) or 0.0))
        for key, value in attrs.items():
            trial.set_user_attr(key, value)
        frozen = self.study.tell(trial, state=TrialState.PRUNED)
        self.on_finish(frozen)
        return frozen

    def _run_again(self, frozen: FrozenTrial, reason: str) -> None:
        """A lost worker's run is queued again while the run's worker deaths stay within ``max_failures``.

        Ray Tune's own retries (``note_retry``) do not cover every death: a retry placed on a node that
        is already gone fails while the trial is still PENDING, and Tune ends the trial there. Past the
        limit the FAIL stands (``--resume`` queues it once more, ``study.requeue_lost_workers``).
        """
        deaths = int(frozen.user_attrs.get(st.RETRIES) or 0)
        if deaths > self.space.max_failures or not queueing.requeue(self.study, frozen):
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
        queueing.requeue(self.study, frozen)
        self.on_finish(frozen)
        return frozen

    def interrupt_all(self) -> int:
        """Ctrl-C: every trial in flight, and any other RUNNING trial of the study, is queued again."""
        n = len(self.in_flight)
        for proposal in list(self.in_flight.values()):
            self.interrupt(proposal)
        return n + queueing.recover_interrupted(self.study, self.storage)
