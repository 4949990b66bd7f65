"""``recipesearch replicate RUN_DIR [--seeds N] [--claims headline|confirmed|all] [--out DIR] [--resume | --force]
[--address ADDR] [--executor ray|inprocess] [--concurrency N] [--cpus-per-trial X] [--gpus-per-trial X|auto]
[--quiet]``."""
from __future__ import annotations

import argparse

from recipesearch.commands.search import gpus_value, positive_number


def positive_int(text: str) -> int:
    """argparse type: 1, 2, 3 ..."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="the run directory of a finished search")
    p.add_argument("--seeds", type=positive_int, default=3, metavar="N",
                   help="fresh seeds per budget for the baseline and each claimed recipe (default 3)")
    p.add_argument("--claims", choices=("headline", "confirmed", "all"), default="confirmed",
                   help="which claims: the headline only, every confirmed speedup (default), or every speedup "
                        "the report shows")
    p.add_argument("--out", metavar="DIR",
                   help="the replication's own run directory (default RUN_DIR/replication, whose results also "
                        "go into RUN_DIR's report)")
    again = p.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true", help="continue an interrupted replication in --out")
    again.add_argument("--force", action="store_true", help="delete a replication in --out and start again")
    p.add_argument("--address", metavar="ADDR", help="join this Ray cluster instead of starting a local Ray")
    p.add_argument("--executor", choices=("ray", "inprocess"), default="ray",
                   help="ray: runs on Ray Tune (default); inprocess: no Ray, one run after another here")
    p.add_argument("--concurrency", type=positive_int, metavar="N", help="runs at a time (default: the space's)")
    p.add_argument("--cpus-per-trial", type=positive_number, metavar="X", help="Ray CPUs each run takes")
    p.add_argument("--gpus-per-trial", type=gpus_value, metavar="X",
                   help="GPUs each run takes: auto, 0, a fraction or a whole number")
    p.add_argument("--no-report", dest="report", action="store_false", help="do not rebuild RUN_DIR's report")
    p.add_argument("--quiet", action="store_true", help="plain log lines instead of the live progress display")


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from recipesearch.engine.replicate import ReplicateOptions, replicate
    from recipesearch.report.replication_text import summary_lines

    opts = ReplicateOptions(seeds=args.seeds, claims=args.claims, out=Path(args.out) if args.out else None,
                            resume=args.resume, force=args.force, address=args.address, executor=args.executor,
                            concurrency=args.concurrency, cpus_per_trial=args.cpus_per_trial,
                            gpus_per_trial=args.gpus_per_trial, quiet=args.quiet, report=args.report,
                            command=["recipesearch", *sys.argv[1:]])
    result = replicate(args.run_dir, opts)
    print("\n".join(summary_lines(result.scored, result.verdict, args.claims, result.out)))
    return 0
