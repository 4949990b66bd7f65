"""``recipesearch report RUN_DIR``: rebuild pareto.csv, recipes/, plots/ and index.html from the stored trials."""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="the --out directory of a search (holds trials.csv)")
    p.add_argument("--quiet", action="store_true", help="print only the path of index.html")


def run(args: argparse.Namespace) -> int:
    import math

    from recipesearch.report import build_info, load_run, write_report

    info = build_info(*load_run(args.run_dir), run_dir=args.run_dir)
    index = write_report(info, args.run_dir)
    if args.quiet:
        print(index)
        return 0
    h = info.headline
    print(f"{len(info.completed)} completed trials, {len(info.failed)} failed; "
          f"{len(info.front)} on the frontier (pareto.csv, recipes/)")
    if h.number is not None and math.isfinite(h.speedup):
        print(f"best speedup at the baseline's accuracy ({h.baseline_accuracy:.2%} in {h.baseline_seconds:.3g} s): "
              f"{h.speedup:.2f}x, trial {h.number} ({h.algorithms or 'no algorithms'}, {h.recipe_seconds:.3g} s)")
    if h.front_number is not None:
        print(f"largest speedup at matched accuracy on the frontier: {h.front_speedup:.2f}x at {h.front_accuracy:.2%} "
              f"in {h.front_seconds:.3g} s, trial {h.front_number} ({h.front_algorithms or 'no algorithms'})")
    for warning in info.warnings:
        print(f"note: {warning}")
    print(f"wrote {index}")
    return 0
