"""Queueing runs into a search's study, and recovering the runs that did not finish.

Every stage enqueues the runs it is missing (``enqueue_missing``), which is what makes each stage resumable
without running anything twice. An interrupted trial (its driver went away) or one whose worker was lost is
queued again whole (``requeue``): its FAIL stays in the study as the record of what happened, its re-run
(``REQUEUED_FROM``) stands for it in the budget and goes on from its checkpoints (``rerun_chain``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from recipesearch.engine.study import (
    BASELINE,
    CARRIED_ATTRS,
    INTERRUPTED,
    QUEUED_PARAMS,
    REQUEUED_FROM,
    SEED_INDEX,
    TUNE,
    WORKER_LOST,
    is_finished,
    is_interrupted,
    objective_accuracy,
    present_runs,
    queued_params,
    rerun_elsewhere,
    run_key,
    stage_of,
    trial_params,
)

if TYPE_CHECKING:
    from recipesearch.space import SearchSpace


def enqueue(study: optuna.Study, params: dict[str, Any], **attrs: Any) -> None:
    study.enqueue_trial(params, user_attrs={QUEUED_PARAMS: dict(params), **attrs})


def enqueue_missing(study: optuna.Study, runs: Sequence[tuple[dict[str, Any], int]], stages: Sequence[str],
                    **attrs: Any) -> int:
    """Enqueue each (params, seed index) that no trial of ``stages`` holds yet. Returns how many: 0 on a
    resume that already queued them, which is what makes every stage resumable."""
    present = present_runs(study.get_trials(deepcopy=False), stages)
    added = 0
    for params, seed in runs:
        key = run_key(params, seed)
        if key not in present:
            present.add(key)
            enqueue(study, params, **attrs, **{SEED_INDEX: int(seed)})
            added += 1
    return added


def ensure_lr_sweep(study: optuna.Study, space: SearchSpace) -> int:
    """Enqueue the LR sweep of the base recipe (``baseline.tune_lr``) where it is missing."""
    return enqueue_missing(study, [(p, 0) for p in space.lr_sweep()], [TUNE], stage=TUNE, is_baseline=False)


def tuned_lr(trials: Sequence[FrozenTrial], space: SearchSpace) -> tuple[bool, Any]:
    """(decided, LR parameter for the baseline). Not decided while a sweep run waits or runs; decided
    as the base LR (None) when the space does not tune or no sweep run completed. Ties keep the lower LR."""
    if not space.baseline.tune_lr:
        return True, None
    sweep = [t for t in trials if stage_of(t) == TUNE and not is_interrupted(t)]
    if len(sweep) < len(space.lr_sweep()) or any(not is_finished(t) for t in sweep):
        return False, None
    done = [(objective_accuracy(t.user_attrs, space), t) for t in sweep if t.state == TrialState.COMPLETE]
    done = [(acc, t) for acc, t in done if acc is not None]
    if not done:
        return True, None
    best = max(done, key=lambda pair: (pair[0], -float(trial_params(pair[1]).get("optimizer.lr", 0))))
    return True, trial_params(best[1]).get("optimizer.lr")


def ensure_baselines(study: optuna.Study, space: SearchSpace, lr: Any = None) -> int:
    """Enqueue the base recipe (at LR parameter ``lr``; None: the base LR) at every budget and seed index
    that has no baseline trial yet (any state). Returns how many."""
    runs = [(params, s) for params in space.baselines(lr)
            for s in range(space.baseline.seeds_at(params["budget"], space.budgets))]
    # The LR sweep's run at the chosen LR is already the baseline's first seed at that budget.
    return enqueue_missing(study, runs, [TUNE, BASELINE], stage=BASELINE, is_baseline=True)


def requeue(study: optuna.Study, t: FrozenTrial) -> bool:
    """Queue ``t``'s run again (its full params, ``REQUEUED_FROM`` and the ``CARRIED_ATTRS``): the one way an
    interrupted or lost trial runs once more. False when it has nothing to re-run (``rerun_params``)."""
    params = rerun_params(t)
    if params:
        enqueue(study, params, **{REQUEUED_FROM: t.number},
                **{k: t.user_attrs[k] for k in CARRIED_ATTRS if k in t.user_attrs})
    return bool(params)


def rerun_params(t: FrozenTrial) -> dict[str, Any]:
    """What to run again for an interrupted trial: all of its params, or nothing.

    An enqueued trial (baseline, sweep move, earlier re-run) keeps its full params. A sampled one is
    complete once the loop stored its recipe attrs (``algorithms``); a driver killed in the middle of
    drawing params leaves a partial set that never reached a worker: nothing to re-run.
    """
    return queued_params(t) or (dict(t.params) if "algorithms" in t.user_attrs else {})


def rerun_chain(trials: Sequence[FrozenTrial], number: int | None) -> list[int]:
    """The trial ``number`` and the trials it re-ran in turn (``REQUEUED_FROM``), latest first: a re-run's
    checkpoints are more advanced than its predecessor's."""
    by_number = {t.number: t for t in trials}
    chain: list[int] = []
    while number is not None and int(number) not in chain:
        chain.append(int(number))
        number = by_number[int(number)].user_attrs.get(REQUEUED_FROM) if int(number) in by_number else None
    return chain


def checkpoints_still_needed(trials: Sequence[FrozenTrial]) -> set[int]:
    """The trials whose checkpoints a re-run still queued (WAITING) would go on from: its whole chain."""
    return {n for t in trials if t.state == TrialState.WAITING and t.user_attrs.get(REQUEUED_FROM) is not None
            for n in rerun_chain(trials, t.user_attrs[REQUEUED_FROM])}


def recover_interrupted(study: optuna.Study, storage: optuna.storages.BaseStorage) -> int:
    """Mark the RUNNING trials a killed driver left behind as interrupted and enqueue them again.

    Assumes no other driver runs this study at the same time (a shared --storage included). The error
    text goes through the storage's public ``set_trial_user_attr``: no ``optuna.Trial`` exists for a
    trial this process did not ask.
    """
    stale = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.RUNNING]
    study_id = storage.get_study_id_from_name(study.study_name) if stale else None
    for t in stale:
        trial_id = storage.get_trial_id_from_study_id_trial_number(study_id, t.number)
        storage.set_trial_user_attr(trial_id, "error", INTERRUPTED)
        study.tell(t.number, state=TrialState.FAIL)
        requeue(study, t)
    return len(stale)


def requeue_lost_workers(study: optuna.Study) -> int:
    """``--resume``: queue again each trial whose worker died on every attempt (``WORKER_LOST``) and that no
    earlier resume queued yet. Its FAIL stays in the study (the record of what happened) and stops counting
    towards the budget (``count_finished``)."""
    trials = study.get_trials(deepcopy=False)
    rerun = rerun_elsewhere(trials)
    lost = [t for t in trials if t.state == TrialState.FAIL and t.user_attrs.get(WORKER_LOST)
            and t.number not in rerun]
    return sum(requeue(study, t) for t in lost)
