"""Reading and counting a search's Optuna trials by the stages and user attrs the engine writes on them (their
names: recipesearch/trials_columns.py, the one vocabulary of trials and trials.csv). Only Optuna's public API.

The study is the single source of truth: every measured number, the trained recipe and the error text
are trial ``user_attrs``, so trials.csv is a pure function of the study (engine/trial_rows.py) and
``optuna.load_study`` (or optuna-dashboard) sees exactly what the report sees. Opening the study:
engine/storage.py; queueing runs into it and recovering interrupted ones: engine/queueing.py.

Interrupted trials: a trial whose driver went away before it finished is told FAIL with
``error="interrupted"`` and its parameters are enqueued again, so the sampler keeps every completed trial
in its history and the interrupted recipe runs once more. Interrupted failures do not count towards the
trial budget (``count_finished``).

Params of a queued trial: Optuna keeps an enqueued trial's parameters internally until it is asked, so
whatever we enqueue also carries its params as the user attr ``QUEUED_PARAMS``: trials.csv, the sweep and
resume read them from there.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from recipesearch.space import params_key

# The trials' user-attr keys and stages are trials.csv's names, defined once in recipesearch/trials_columns.py;
# the engine, its tests and bench read them as ``st.NAME`` next to the functions below, hence the unused ones.
from recipesearch.trials_columns import (  # noqa: F401
    ARM,
    BASELINE,
    BUSY_RERUNS,
    CONFIRM,
    DUPLICATE_OF,
    ERROR,
    IS_BASELINE,
    OF_TRIAL,
    PROMOTED_FROM,
    PRUNE_REASON,
    PRUNED_AT,
    QUEUED_PARAMS,
    REPLICATE,
    REQUEUED_FROM,
    RETRIES,
    RUNGS,
    SEARCH,
    SEED_INDEX,
    SIMPLIFY,
    STAGE,
    STAGES,
    TIME,
    TUNE,
    WORKER_LOST,
)

if TYPE_CHECKING:
    import pandas as pd

    from recipesearch.space import SearchSpace

INTERRUPTED = "interrupted"  # error text of a trial whose driver went away before it finished
OWNER = "run_dir"  # study user attr: the run directory that created the study
EARLY = "early"  # a confirmation run queued during the proposals (engine/confirm_stage.py ``plan_early``)
# What a re-run inherits: its stage and seed, and the worker deaths its run already had (``RETRIES``: each
# death of the run's worker so far, the one that ended a FAIL included).
# ``arm``: a replication's (engine/replicate.py); ``busy_reruns``: engine/strict_timing.py's count.
CARRIED_ATTRS = (IS_BASELINE, STAGE, SEED_INDEX, OF_TRIAL, RETRIES, PROMOTED_FROM, ARM, BUSY_RERUNS, EARLY)


def queued_params(t: FrozenTrial) -> dict[str, Any]:
    """The params a trial was enqueued with ({} for a sampled trial)."""
    # Studies written before QUEUED_PARAMS existed: Optuna's record of an enqueued trial's params.
    return dict(t.user_attrs.get(QUEUED_PARAMS) or t.system_attrs.get("fixed_params") or {})


def trial_params(t: FrozenTrial) -> dict[str, Any]:
    """Params of any trial: sampled ones, or those it was queued with (while it waits, and the budget of a
    confirmation run past the space's largest, which Optuna's record lacks: ``SearchSpace.suggest``)."""
    return {**queued_params(t), **t.params}


def is_interrupted(t: FrozenTrial) -> bool:
    return t.state == TrialState.FAIL and t.user_attrs.get(ERROR) == INTERRUPTED


def stage_of(t: FrozenTrial | optuna.Trial) -> str:
    """The trial's stage; trials of studies written before stages existed: baseline or search."""
    stage = t.user_attrs.get(STAGE)
    if stage in STAGES:
        return stage
    return BASELINE if t.user_attrs.get(IS_BASELINE) else SEARCH


def seed_index(t: FrozenTrial | optuna.Trial) -> int:
    """0 for a recipe's first run; k for its k-th repeat (recipe seed = space seed + k)."""
    return int(t.user_attrs.get(SEED_INDEX) or 0)


def run_key(params: dict[str, Any], seed: int) -> str:
    """One training run: the params and the seed index (the same recipe at another seed is another run)."""
    return f"{params_key(params)}#{int(seed)}"


def present_runs(trials: Sequence[FrozenTrial], stages: Sequence[str] | None = None) -> set[str]:
    """``run_key`` of every trial in ``stages`` (all by default) that ran, runs or waits: interrupted ones
    are left out because their re-queued copy stands for them."""
    return {run_key(trial_params(t), seed_index(t)) for t in trials
            if not is_interrupted(t) and (stages is None or stage_of(t) in stages)}


def sampler_sees(t: FrozenTrial) -> bool:
    """One run per recipe: the first seed of every stage but confirmation and simplify, which re-train what
    the sampler already chose (engine/sampler_view.py)."""
    return stage_of(t) not in (CONFIRM, SIMPLIFY) and seed_index(t) == 0


def is_finished(t: FrozenTrial) -> bool:
    return t.state in (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED) and not is_interrupted(t)


def rerun_elsewhere(trials: Sequence[FrozenTrial]) -> set[int]:
    """Numbers of trials another trial was queued to run again (interrupted, or their worker lost)."""
    return {int(t.user_attrs[REQUEUED_FROM]) for t in trials if t.user_attrs.get(REQUEUED_FROM) is not None}


def count_finished(trials: Sequence[FrozenTrial], stages: Sequence[str] | None = None) -> int:
    """Trials that count towards a budget: COMPLETE or FAIL for a reason of their own (in ``stages``). A lost
    worker's FAIL stops counting once ``--resume`` queued it again: its re-run stands for it."""
    rerun = rerun_elsewhere(trials)
    return sum(1 for t in trials if is_finished(t) and (stages is None or stage_of(t) in stages)
               and not (t.state == TrialState.FAIL and t.number in rerun))


def count_unfinished(trials: Sequence[FrozenTrial], stages: Sequence[str]) -> int:
    """Trials of ``stages`` still queued or running: what a stage has left to do."""
    return sum(1 for t in trials if stage_of(t) in stages and t.state in (TrialState.WAITING, TrialState.RUNNING))


def count_finished_rows(df: pd.DataFrame) -> int:
    """``count_finished`` on a trials.csv table."""
    if df.empty:
        return 0
    import pandas as pd

    finished = df["state"].isin(["COMPLETE", "FAIL", "PRUNED"]) & (df["error"] != INTERRUPTED)
    if REQUEUED_FROM in df:
        rerun = pd.to_numeric(df[REQUEUED_FROM], errors="coerce").dropna().astype(int)
        finished &= ~((df["state"] == "FAIL") & pd.to_numeric(df["number"], errors="coerce").isin(rerun))
    return int(finished.sum())


def count_in_state(trials: Sequence[FrozenTrial], state: TrialState) -> int:
    return sum(1 for t in trials if t.state == state)


def objective_accuracy(attrs: dict[str, Any], space: SearchSpace) -> float | None:
    """The accuracy the space selects on (``SearchSpace.selection_column``) of a trial's attrs, or None."""
    value = attrs.get(space.selection_column)
    return float(value) if value is not None else None


def sweep_history(trials: Sequence[FrozenTrial], space: SearchSpace) -> list[dict[str, Any]]:
    """``SweepStrategy.propose`` input: one dict per trial (in-flight ones included, interrupted ones not)."""
    out = []
    for t in trials:
        if is_interrupted(t):
            continue  # its requeued copy stands for it
        done = t.state == TrialState.COMPLETE
        out.append({"params": trial_params(t), "state": t.state.name,
                    "accuracy": objective_accuracy(t.user_attrs, space),
                    "train_seconds": t.user_attrs.get(TIME) if done else None})
    return out
