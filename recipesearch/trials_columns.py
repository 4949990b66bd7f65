"""The vocabulary of a search's trials: the columns of trials.csv and the user-attr keys of the study's trials
they are read from, which exist, in what order, which hold numbers or text, and the stages a trial can be in.

trials.csv is the search's contract with the report (``rundir.py``'s docstring), and every row of it is a
function of one trial's user attrs (engine/trial_rows.py), so the two share one set of names: this module is
their only definition. It sits below ``rundir.py`` (writes and reads the file), ``runcheck.py`` (checks a
stored one), ``analysis/`` and ``engine/``, so that none of them imports another to learn the names.

Accuracy by split: ``accuracy`` is top-1 on the **test** split (its name predates validation; stored runs keep
it), ``val_accuracy`` on the validation split held out of train. A search selects on one of them (its
``metric_split``, ``metric_column``); derived columns name the split in full (pareto.csv's
``val_accuracy_mean``, ``test_accuracy_mean``: ``split_accuracy``).
"""
from __future__ import annotations

# The measured columns every reader knows by name.
ACCURACY = "accuracy"  # test accuracy (top-1 on the test split): reported, chosen on only by metric_split: test
VAL_ACCURACY = "val_accuracy"  # validation accuracy (held out of train): what metric_split: val selects on
TIME = "train_seconds"  # training time, evaluation excluded
COST = "cost"  # train_seconds priced by the space's cost model (empty without one)
# The splits a search can select on (``metric_split``) and the trials column that holds each one's accuracy.
TEST_SPLIT, VAL_SPLIT = "test", "val"
SPLIT_COLUMNS = {TEST_SPLIT: ACCURACY, VAL_SPLIT: VAL_ACCURACY}

# User attrs of a trial that are also trials.csv columns (engine/study.py reads and counts trials by them).
IS_BASELINE, ERROR, SEED, ARM, BUSY_RERUNS = "is_baseline", "error", "seed", "arm", "busy_reruns"
# Stages of a search, in the order they run (user attr ``stage``): the LR sweep of the base recipe
# (baseline.tune_lr), the baseline runs (every budget x seeds), the proposals (sampled or swept), the
# confirmation re-runs of the best proposals (extra seeds, every budget; user attr ``of_trial``), the simplify
# stage's runs (engine/simplify.py), and ``recipesearch replicate``'s runs, in a study of their own
# (engine/replicate.py).
TUNE, BASELINE, SEARCH, CONFIRM, SIMPLIFY, REPLICATE = "tune", "baseline", "search", "confirm", "simplify", "replicate"
STAGES = (TUNE, BASELINE, SEARCH, CONFIRM, SIMPLIFY, REPLICATE)
STAGE, SEED_INDEX, OF_TRIAL = "stage", "seed_index", "of_trial"
# A trial whose worker died on every attempt Tune allowed (node lost, killed for memory), and how many
# times Tune started a trial again after its worker died; the trial an interrupted or lost one re-runs.
WORKER_LOST, RETRIES, REQUEUED_FROM = "worker_lost", "retries", "requeued_from"
# The scheduler's (engine/scheduler.py, analysis/rungs.py): [[fraction, accuracy, train_seconds], ...] a trial
# reported at its rungs; the rung where it was stopped (PRUNED) and why; the trial a promotion came from.
RUNGS, PRUNED_AT, PRUNE_REASON, PROMOTED_FROM = "rungs", "pruned_at", "prune_reason", "promoted_from"
# a proposal of a recipe the search has already trained or is training (the same recipe id: the same params,
# budget and seed), answered without training: PRUNED, with the number of the trial that trains it
DUPLICATE_OF = "duplicate_of"
# Not a column: the params an enqueued trial was queued with (Optuna keeps them internal until it is asked).
QUEUED_PARAMS = "queued_params"

HEAD_COLUMNS = ("number", "state", IS_BASELINE, "budget", "epochs", "algorithms")
TAIL_COLUMNS = (ACCURACY, VAL_ACCURACY, "loss", TIME, "throughput", "data_wait_fraction", "eval_seconds", COST,
                "recipe_id", "recipe_json", ERROR, "datetime_start", "datetime_complete", SEED, STAGE,
                OF_TRIAL, RETRIES, REQUEUED_FROM, "hardware", PRUNED_AT, PROMOTED_FROM, "rung_seconds",
                "checkpoint_seconds", "resumes", RUNGS, DUPLICATE_OF, "cpu_share", "load_start", "load_end",
                "gpu_shared", BUSY_RERUNS, ARM)
# How busy the machine was (recipesearch/machine_load.py): ``cpu_share`` = the training process's CPU seconds /
# (train_seconds x threads), ``load_*`` the 1-minute load average at the trial's start and end, ``gpu_shared``
# whether another process computed on its GPU; ``busy_reruns`` (--strict-timing); ``arm`` (a replication's run).
NUMERIC_COLUMNS = ("budget", "epochs", ACCURACY, VAL_ACCURACY, "loss", TIME, "throughput",
                   "data_wait_fraction", "eval_seconds", COST, SEED, OF_TRIAL, RETRIES, REQUEUED_FROM, PRUNED_AT,
                   PROMOTED_FROM, "rung_seconds", "checkpoint_seconds", "resumes", DUPLICATE_OF, "cpu_share",
                   "load_start", "load_end", BUSY_RERUNS)
# ``rungs``: what a trial reported at its rungs (scheduler: moasha), JSON [[fraction, accuracy, train_seconds], ...]
TEXT_COLUMNS = ("state", "algorithms", "recipe_id", "recipe_json", ERROR, "datetime_start", "datetime_complete",
                STAGE, "hardware", RUNGS, ARM)


def metric_column(metric_split: str) -> str:
    """The trials column a search with this ``metric_split`` selects on: ``val_accuracy`` or (test) ``accuracy``."""
    return VAL_ACCURACY if metric_split == VAL_SPLIT else ACCURACY


def split_of(column: str) -> str:
    """The split an accuracy column (``accuracy`` or ``val_accuracy``) is measured on: "test" or "val"."""
    return VAL_SPLIT if column == VAL_ACCURACY else TEST_SPLIT


def split_accuracy(column: str, statistic: str) -> str:
    """A derived column of accuracy ``column`` named by its split: ('val_accuracy', 'mean') -> 'val_accuracy_mean',
    ('accuracy', 'ci_low') -> 'test_accuracy_ci_low' (``accuracy`` alone means test only for trials.csv)."""
    return f"{split_of(column)}_accuracy_{statistic}"
