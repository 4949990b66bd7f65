"""What ``recipesearch search`` (and ``replicate``) is asked to do, checked before anything is written.

``SearchOptions`` holds the flags (or the Python API's arguments); ``checked_options`` refuses a bad one in
one line (the Python API passes values argparse never saw) and returns the space with the overrides that
change it (--scheduler, --simplify, --checkpoint-minutes) and the per-trial resources.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from recipesearch.errors import UserError

if TYPE_CHECKING:
    from recipesearch.space import Resources, SearchSpace

EXECUTORS = ("ray", "inprocess")


@dataclass
class SearchOptions:
    out: Path
    resume: bool = False
    force: bool = False
    address: str | None = None  # join this Ray cluster instead of starting a local one
    storage: str | None = None  # Optuna RDB URL; default sqlite:///OUT/study.db
    quiet: bool = False
    trials: int | None = None  # overrides space.trials
    search_budget: float | None = None  # overrides space.search_budget: trainings of the baseline at budget 1
    time_budget: str | float | None = None  # wall-clock cap: "2h", "90m" (or seconds); instead of search_budget
    warm_start: list[str] = field(default_factory=list)  # earlier run directories, on top of the space's
    concurrency: int | None = None  # overrides space.concurrency
    cpus_per_trial: float | None = None  # overrides space.resources.cpus
    gpus_per_trial: float | str | None = None  # overrides space.resources.gpus (a number or "auto")
    executor: Literal["ray", "inprocess"] = "ray"  # inprocess: no Ray, trials one after another here
    scheduler: str | None = None  # overrides space.scheduler.name (fifo, moasha, promote, moasha+promote)
    checkpoint_minutes: float | None = None  # overrides space.checkpoint_minutes (0: no checkpoints)
    simplify: bool = False  # turns the simplify stage on (engine/simplify.py), whatever the space says
    strict_timing: bool = False  # a trial timed on a busy machine runs again (engine/strict_timing.py)
    report: bool = True  # build the report (recipesearch.report) at the end, and during the search
    report_every: int = 4  # rebuild the report after this many finished trials (0: only at the end)
    # ... but at most this often: a build is ~4 s of CPU that would compete with the trials being timed
    report_interval_s: float = 60.0
    command: list[str] = field(default_factory=lambda: list(sys.argv))


def resources_of(space: SearchSpace, options: SearchOptions) -> Resources:
    """The space's per-trial resources with --cpus-per-trial / --gpus-per-trial in place (checked here too,
    for the Python API)."""
    from recipesearch.space.schema import gpus_problem

    cpus, gpus = options.cpus_per_trial, options.gpus_per_trial
    if cpus is not None and (isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or not cpus > 0
                             or cpus == float("inf")):
        raise UserError(f"--cpus-per-trial must be a number > 0, not {cpus!r}")
    if gpus is not None and gpus_problem(gpus):
        raise UserError(f"--gpus-per-trial: {gpus_problem(gpus)}")
    workers = space.resources.workers
    if gpus is not None and workers > 1 and gpus not in ("auto", 0, 1):
        raise UserError(f"--gpus-per-trial: with resources.workers {workers} it is each worker's, and a worker "
                        f"trains on one device: auto, 0 or 1, not {gpus!r}")
    return space.resources.override(cpus=cpus, gpus=gpus)


def checked_options(space: SearchSpace, options: SearchOptions) -> tuple[SearchSpace, Resources]:
    """(the space with the flags that override it, the per-trial resources); a bad flag is a UserError."""
    concurrency = int(options.concurrency if options.concurrency is not None else space.concurrency)
    if concurrency < 1:
        raise UserError("--concurrency must be at least 1")
    resources = resources_of(space, options)
    if options.scheduler is not None:
        from recipesearch.space.schema import SCHEDULERS

        if options.scheduler not in SCHEDULERS:
            raise UserError(f"--scheduler must be one of {', '.join(SCHEDULERS)}, not {options.scheduler!r}")
        space = space.with_scheduler(name=options.scheduler)
    if options.simplify:
        space = space.with_simplify(True)
    minutes = options.checkpoint_minutes
    if minutes is not None:
        if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or not 0 <= minutes < float("inf"):
            raise UserError(f"--checkpoint-minutes must be a number >= 0 (0: no checkpoints), not {minutes!r}")
        space = space.with_checkpoint_minutes(minutes)
    if options.executor not in EXECUTORS:
        raise UserError(f"--executor must be one of {', '.join(EXECUTORS)}, not {options.executor!r}")
    if options.executor == "inprocess" and resources.workers > 1:
        raise UserError(f"--executor inprocess trains one process; resources.workers "
                        f"{resources.workers} needs the Ray executor")
    gpus = resources.gpus
    if options.executor == "inprocess" and gpus != "auto" and float(gpus) > 1:
        asked = (f"--gpus-per-trial {float(options.gpus_per_trial):g}" if options.gpus_per_trial is not None
                 else f"resources.gpus {float(gpus):g}")
        raise UserError(f"--executor inprocess trains one trial at a time on one device; {asked} needs the Ray "
                        "executor (or ask for 1 GPU)")
    if options.executor == "inprocess" and options.address:
        raise UserError("--executor inprocess trains in this process; it cannot use --address")
    return space, resources
