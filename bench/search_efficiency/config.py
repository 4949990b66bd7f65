"""What the search_efficiency benchmark compares: its arms (sampler, scheduler), the replay grid, the goal,
and how an arm's trials and labels are read (stopped, repeated, the long runs' labels).
"""
from __future__ import annotations

from typing import Any

from bench.common import ROOT

NAME = "search_efficiency"


TITLE = "Search efficiency: hypervolume vs cumulative training time per sampler and scheduler (replay + real runs)"


# The real searches' arms: label -> (sampler, scheduler); issue 14's seven, then promotion with the
# model-based samplers (the best replay arms), interleaved within a seed.
REAL_ARMS = {"random": ("random", "fifo"), "tpe": ("tpe", "fifo"), "gp": ("gp", "fifo"), "nsga2": ("nsga2", "fifo"),
             "tpe+moasha": ("tpe", "moasha"), "random+moasha": ("random", "moasha"), "promote": ("random", "promote"),
             "tpe+promote": ("tpe", "promote"), "gp+promote": ("gp", "promote")}


SAMPLERS = tuple(REAL_ARMS)


# Replay arms: name -> (sampler, scheduler). The schedulers keep the space's eta 3 and rungs 1/9, 1/3, but
# one: its first rung at 1/3 (the table holds both rungs), because 1/9 of a digits run is 4 to 17 steps.
LATE_RUNG = {"name": "moasha", "min_fraction": 1 / 3}


ARMS: dict[str, tuple[str, str | dict[str, Any]]] = {
    "random": ("random", "fifo"), "tpe": ("tpe", "fifo"), "gp": ("gp", "fifo"), "nsga2": ("nsga2", "fifo"),
    "sweep": ("sweep", "fifo"), "tpe+moasha": ("tpe", "moasha"), "random+moasha": ("random", "moasha"),
    "random+moasha, rung 1/3 only": ("random", LATE_RUNG),
    "promote": ("random", "promote"), "tpe+promote": ("tpe", "promote"), "gp+promote": ("gp", "promote"),
    "random+moasha+promote": ("random", "moasha+promote"),
}


SYNETUNE, CONTROL = "syne-tune MOASHA", "our MO-ASHA rule, same driver"


# A trial stopped at a rung costs a fraction of one run to its end, yet counts as a whole trial: at the same
# trial count a scheduler spends much less compute than FIFO and may end before random's final hypervolume.
# The goal is about compute, so the scheduler arms also run at random's compute: up to LONG_FACTOR x the
# trials, each search cut where its compute first reaches random's median compute per search.
LONG_FACTOR = 10


LONG_SUFFIX = " (random's compute)"


# (not gp+promote: a Gaussian-process fit per trial over up to 10x the trials would take the replay hours)
LONG_ARMS = ("tpe+moasha", "random+moasha", "random+moasha, rung 1/3 only", "promote", "tpe+promote",
             "random+moasha+promote", SYNETUNE, CONTROL)


GOAL_RATIO = 0.30  # issue 14: a scheduler reaches random's final hypervolume with <= 0.30x its compute


BOOTSTRAP = 1000


DIGITS_SPACE = ROOT / "search_spaces" / "digits.yaml"


BASE_RECIPE = ROOT / "recipes" / "digits_baseline.yaml"


RUNS_DIR = ROOT / "runs" / "bench-search"


# The replay grid: every recipe of this discrete space is trained once and recorded.
GRID = {"budgets": [0.25, 0.5, 1.0], "algorithms": ["channels_last", "progressive_resizing", "blurpool", "mixup", "ema",
                                                    "label_smoothing", "sam", "patch_whitening"]}


GRID_QUICK = {"budgets": [0.25, 0.5, 1.0], "algorithms": ["channels_last", "progressive_resizing", "mixup"]}


DIRECTIONS = ("maximize", "minimize")


def stopped(t: dict[str, Any]) -> bool:
    """Stopped at a rung by a scheduler (not a repeated proposal, which is PRUNED without training)."""
    return t["state"] == "PRUNED" and t.get("duplicate_of") is None


def repeated(t: dict[str, Any]) -> bool:
    return t.get("duplicate_of") is not None


def scheduler_label(scheduler: str | dict[str, Any]) -> str:
    if isinstance(scheduler, str):
        return scheduler
    rest = ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in scheduler.items() if k != "name")
    return f"{scheduler['name']} ({rest})"


def long_label(arm: str) -> str:
    return arm + LONG_SUFFIX


def arm_of(label: str) -> str:
    return label.removesuffix(LONG_SUFFIX)
