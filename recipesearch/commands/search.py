"""``recipesearch search SPACE.yaml|NAME --out DIR [--resume | --force] [--address ADDR] [--storage URL]
[--executor ray|inprocess] [--trials N] [--concurrency N] [--cpus-per-trial X] [--gpus-per-trial X|auto]
[--checkpoint-minutes M] [--quiet]``."""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("space", help="search space YAML file, or the name of a shipped one (recipesearch spaces)")
    p.add_argument("--out", required=True, help="run directory: study.db, trials.csv, run.json, report")
    again = p.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="continue the search in --out: completed trials are kept, interrupted ones run again")
    again.add_argument("--force", action="store_true", help="delete a non-empty --out and start again")
    p.add_argument("--address", metavar="ADDR",
                   help="join this Ray cluster (host:port of `ray start --head`) instead of starting a local Ray")
    p.add_argument("--storage", metavar="URL",
                   help="Optuna RDB storage URL shared by a cluster, e.g. postgresql://USER@HOST/DB (needs "
                        "`pip install recipesearch[postgres]`; default: sqlite:///OUT/study.db)")
    p.add_argument("--executor", choices=("ray", "inprocess"), default="ray",
                   help="ray: trials on Ray Tune (default); inprocess: no Ray, one trial after another in this process")
    p.add_argument("--trials", type=int, metavar="N", help="total trials, baselines included (overrides the space)")
    p.add_argument("--concurrency", type=int, metavar="N", help="trials at a time (overrides the space)")
    p.add_argument("--search-budget", type=positive_number, metavar="N",
                   help="every stage within N trainings of the baseline at budget 1: proposals stop where the rest "
                        "is the confirmation's (overrides the space's search_budget)")
    p.add_argument("--warm-start", action="append", default=[], metavar="RUN_DIR",
                   help="an earlier search (a proxy of this one: data.subset, smaller images, fewer epochs) whose "
                        "confirmed and front recipes this search proposes first; repeat for more")
    p.add_argument("--time-budget", metavar="DURATION",
                   help="every stage within this wall-clock time (2h, 90m, 1h30m), instead of --search-budget")
    p.add_argument("--cpus-per-trial", type=positive_number, metavar="X",
                   help="Ray CPUs each trial takes (overrides resources.cpus; threads stay threads_per_trial)")
    p.add_argument("--gpus-per-trial", type=gpus_value, metavar="X",
                   help="GPUs each trial takes: auto (1 where the Ray cluster has GPUs, else 0), 0, a fraction "
                        "such as 0.5 (two trials per GPU) or a whole number (overrides resources.gpus)")
    p.add_argument("--scheduler", choices=("fifo", "moasha", "promote", "moasha+promote"),
                   help="stop dominated trials at rungs (moasha), start proposals at the cheapest budget and move "
                        "the best up (promote), or both (overrides the space's scheduler.name)")
    p.add_argument("--simplify", action="store_true",
                   help="after the confirmation, train the headline recipe without each of its methods, then "
                        "without those it does not need as a new curve (turns on the space's simplify stage; "
                        "works on --resume of a finished search)")
    p.add_argument("--strict-timing", action="store_true",
                   help="run again (twice at most) a trial whose training got far less CPU than the search's median "
                        "(cpu_share under 0.75x: another process took its cores), instead of letting its slow time "
                        "into the frontier")
    p.add_argument("--checkpoint-minutes", type=non_negative_number, metavar="M",
                   help="checkpoint each running trial every M minutes, so a trial cut by a lost node or kill -9 "
                        "goes on from there (Ray Tune's retry, --resume); 0: none (overrides checkpoint_minutes, "
                        "default 10)")
    p.add_argument("--report-every", type=non_negative_int, default=4, metavar="K",
                   help="rebuild the report after every K finished trials (0: only at the end; default 4)")
    p.add_argument("--no-report", dest="report", action="store_false",
                   help="no report (rebuild it later with `recipesearch report OUT`)")
    p.add_argument("--quiet", action="store_true", help="plain log lines instead of the live progress display")
    p.add_argument("--plugin", dest="plugins", action="append", default=[], metavar="MODULE",
                   help="a module of your own to import here and in every trial first (its register_model, "
                        "register_dataset and register_algorithm calls); repeat for more")


def non_negative_int(text: str) -> int:
    """argparse type: 0, 1, 2 ... (argparse turns the ValueError into a one-line usage error, exit 2)."""
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value


def non_negative_number(text: str) -> float:
    """argparse type: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 <= value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
    return value


def positive_number(text: str) -> float:
    """argparse type: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}")
    return value


def gpus_value(text: str) -> float | str:
    """argparse type: ``auto`` or a GPU count Ray accepts (a fraction below 1 or whole GPUs)."""
    from recipesearch.space.schema import gpus_problem

    try:
        value: float | str = "auto" if text == "auto" else float(text)
    except ValueError:
        value = text
    problem = gpus_problem(value)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return value


def run(args: argparse.Namespace) -> int:
    import sys

    from recipesearch.engine.api import search

    search(args.space, out=args.out, resume=args.resume, force=args.force, address=args.address,
           storage=args.storage, quiet=args.quiet, trials=args.trials, concurrency=args.concurrency,
           cpus_per_trial=args.cpus_per_trial, gpus_per_trial=args.gpus_per_trial,
           executor=args.executor, scheduler=args.scheduler, report=args.report, report_every=args.report_every,
           checkpoint_minutes=args.checkpoint_minutes, simplify=args.simplify, plugins=args.plugins,
           strict_timing=args.strict_timing, search_budget=args.search_budget, time_budget=args.time_budget,
           warm_start=args.warm_start,
           command=["recipesearch", *sys.argv[1:]])
    return 0
