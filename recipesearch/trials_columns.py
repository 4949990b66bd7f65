"""The columns of trials.csv, the search's contract with the report (``rundir.py``'s docstring): which exist, in
what order, which hold numbers or text, and the stages a trial can be in.

Shared by ``rundir.py``, which writes and reads the file, and ``runcheck.py``, which checks a stored one before
it is trusted; it sits below both so that neither imports the other to learn the contract.
"""
from __future__ import annotations

HEAD_COLUMNS = ("number", "state", "is_baseline", "budget", "epochs", "algorithms")
TAIL_COLUMNS = ("accuracy", "val_accuracy", "loss", "train_seconds", "throughput", "data_wait_fraction", "cost",
                "recipe_id", "recipe_json", "error", "datetime_start", "datetime_complete", "seed", "stage",
                "of_trial", "retries", "requeued_from", "hardware", "pruned_at", "promoted_from", "rung_seconds",
                "checkpoint_seconds", "resumes", "rungs", "duplicate_of", "cpu_share", "load_start", "load_end",
                "gpu_shared", "busy_reruns", "arm")
# How busy the machine was (recipesearch/machine_load.py): ``cpu_share`` = the training process's CPU seconds /
# (train_seconds x threads), ``load_*`` the 1-minute load average at the trial's start and end, ``gpu_shared``
# whether another process computed on its GPU; ``busy_reruns`` (--strict-timing); ``arm`` (a replication's run).
NUMERIC_COLUMNS = ("budget", "epochs", "accuracy", "val_accuracy", "loss", "train_seconds", "throughput",
                   "data_wait_fraction", "cost", "seed", "of_trial", "retries", "requeued_from", "pruned_at",
                   "promoted_from", "rung_seconds", "checkpoint_seconds", "resumes", "duplicate_of", "cpu_share",
                   "load_start", "load_end", "busy_reruns")
# ``rungs``: what a trial reported at its rungs (scheduler: moasha), JSON [[fraction, accuracy, train_seconds], ...]
TEXT_COLUMNS = ("state", "algorithms", "recipe_id", "recipe_json", "error", "datetime_start", "datetime_complete",
                "stage", "hardware", "rungs", "arm")
# ``stage`` of a trial (engine/study.py): the LR sweep, the baseline runs, proposals, confirmation re-runs,
# the simplify stage's runs (engine/simplify.py), and ``recipesearch replicate``'s runs (engine/replicate.py).
STAGES = ("tune", "baseline", "search", "confirm", "simplify", "replicate")
