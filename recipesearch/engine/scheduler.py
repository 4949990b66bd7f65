"""The search's scheduler over the study (space ``scheduler:``): rung reports kept on the trials, the decision
to go on or stop at each rung, a stopped trial's record, and promotions of a budget's best to the next budget.

analysis/rungs.py decides (MO-ASHA, plain numbers); this module reads what it decides on from the study and
writes the outcome back to it, where a resumed search finds it. The search loop (engine/loop.py) calls it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from optuna.trial import FrozenTrial, TrialState

from recipesearch.analysis.frontier import finite
from recipesearch.engine import queueing
from recipesearch.engine import study as st
from recipesearch.engine.confirm import EARLIER_STAGES
from recipesearch.engine.trial_attrs import outcome

if TYPE_CHECKING:
    import optuna

    from recipesearch.analysis.rungs import RungRecord
    from recipesearch.space import SearchSpace


def may_stop(space: SearchSpace, attrs: dict[str, Any]) -> bool:
    """Can the scheduler stop this trial at a rung? Proposals of the search only: the baseline (a sampled base
    recipe is a baseline run too) and the confirmation runs always go on. ``attrs``: the trial's, as asked."""
    return bool(space.scheduler.prunes) and attrs.get(st.STAGE) == st.SEARCH and not attrs.get("is_baseline")


def report_rung(space: SearchSpace, study: optuna.Study, trial: optuna.Trial, attrs: dict[str, Any],
                report: dict[str, Any]) -> bool:
    """A trial's report at a rung (``rung``, ``rung_accuracy`` on the selection split, ``train_seconds``
    so far): stored on the trial, then does it go on? Only trials of its budget that reached the same rung
    are compared (MO-ASHA, ``analysis.rungs.decide``); the baseline and confirmation runs always go on.
    ``attrs``: what the loop set on the trial when it was asked (its stage, budget, is_baseline)."""
    from recipesearch.analysis.rungs import RungRecord, decide

    fraction, acc, secs = float(report["rung"]), report.get("rung_accuracy"), report.get("train_seconds")
    if not (finite(acc) and finite(secs)):
        return True  # nothing to rank on: the trial's end will tell
    # a trial resumed from a checkpoint reports again the rungs it passed after that checkpoint: the latest counts
    reported = [r for r in trial.user_attrs.get(st.RUNGS) or [] if r[0] != fraction]
    reported.append([fraction, float(acc), float(secs)])
    trial.set_user_attr(st.RUNGS, reported)
    if not may_stop(space, attrs):
        return True
    me = RungRecord(trial.number, float(attrs["budget"]), fraction, float(acc), float(secs))
    others = _rung_records(study.get_trials(deepcopy=False), exclude=trial.number)
    decision = decide(me, others, space.scheduler.reduction_factor)
    if not decision.go_on:
        trial.set_user_attr(st.PRUNED_AT, fraction)
        trial.set_user_attr(st.PRUNE_REASON, f"rung {fraction:.3g}: {decision.describe()}")
    return decision.go_on


def _rung_records(trials: list[FrozenTrial], exclude: int) -> list[RungRecord]:
    """Every rung report of the search trials still standing (running, finished or stopped): interrupted
    ones are left out, their re-queued copy reports again."""
    from recipesearch.analysis.rungs import RungRecord

    out = []
    for t in trials:
        if t.number == exclude or st.stage_of(t) != st.SEARCH or t.state not in (
                TrialState.RUNNING, TrialState.COMPLETE, TrialState.PRUNED):
            continue
        budget = t.user_attrs.get("budget")
        for fraction, acc, secs in t.user_attrs.get(st.RUNGS) or []:
            if budget is not None:
                out.append(RungRecord(t.number, float(budget), float(fraction), float(acc), float(secs)))
    return out


def pruned_attrs(space: SearchSpace, trial: optuna.Trial, result: dict[str, Any]) -> dict[str, Any]:
    """The user attrs of a trial stopped at a rung: its last rung's values (its accuracy on the selection split,
    its train_seconds so far) and the rung. The trial is told PRUNED: never on the frontier, which reads
    COMPLETE trials only."""
    rung_values = {k: result[k] for k in ("train_seconds", "rung_eval_seconds", "rung_seconds", "wall_seconds",
                                            "threads", "node", "hardware", "assigned_device", "gpu_ids",
                                            "workers", "worker_nodes", "worker_gpu_ids")
                   if k in result}
    attrs, _ = outcome(space, {**rung_values, space.selection_column: result.get("rung_accuracy")}, None)
    attrs.pop("error", None)
    if finite(result.get("rung_eval_seconds")):  # the stopping rung's evaluation (outcome() keeps rung_seconds)
        attrs["rung_eval_seconds"] = float(result["rung_eval_seconds"])
    attrs[st.PRUNED_AT] = float(result.get("rung", trial.user_attrs.get(st.PRUNED_AT) or 0.0))
    return attrs


def promote(study: optuna.Study, space: SearchSpace, frozen: FrozenTrial, n_trials: int,
            in_flight: int) -> list[tuple[int, float, float]]:
    """``scheduler: promote``: after a search trial finished at one budget, the best ``1/eta`` of the recipes
    finished at that budget are queued at the next budget (``analysis.rungs.promotions``), as many as the
    search's trial budget ``n_trials`` still has room for with ``in_flight`` search trials running (no queued
    leftovers when it is spent). Returns (trial, its budget, the next budget) for each promotion queued."""
    from recipesearch.analysis.rungs import promotions

    budgets = sorted(float(b) for b in space.budgets)
    budget = frozen.user_attrs.get("budget")
    if budget is None or float(budget) not in budgets or float(budget) == budgets[-1]:
        return []
    nxt = budgets[budgets.index(float(budget)) + 1]
    trials = study.get_trials(deepcopy=False)
    finished = [(t.number, acc, float(t.user_attrs["train_seconds"])) for t in trials
                if t.state == TrialState.COMPLETE and st.stage_of(t) == st.SEARCH and st.seed_index(t) == 0
                and t.user_attrs.get("budget") == budget
                and finite(acc := st.objective_accuracy(t.user_attrs, space))]
    done = {int(t.user_attrs[st.PROMOTED_FROM]) for t in trials if t.user_attrs.get(st.PROMOTED_FROM) is not None}
    waiting = st.count_in_state(trials, TrialState.WAITING)
    room = n_trials - st.count_finished(trials, EARLIER_STAGES) - in_flight - waiting
    by_number = {t.number: t for t in trials}
    queued = []
    for number in promotions(finished, done, space.scheduler.reduction_factor)[: max(0, room)]:
        params = {**st.trial_params(by_number[number]), "budget": nxt}
        if queueing.enqueue_missing(study, [(params, 0)], EARLIER_STAGES, stage=st.SEARCH,
                                    is_baseline=False, **{st.PROMOTED_FROM: number}):
            queued.append((number, budget, nxt))
    return queued
