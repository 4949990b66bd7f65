"""``recipesearch report RUN_DIR``: rebuild pareto.csv, recipes/, plots/ and index.html from the stored trials."""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="the --out directory of a search (holds trials.csv)")
    p.add_argument("--quiet", action="store_true", help="print only the path of index.html")


def run(args: argparse.Namespace) -> int:
    from recipesearch.report import build_info, load_run, write_report

    info = build_info(*load_run(args.run_dir), run_dir=args.run_dir)
    index = write_report(info, args.run_dir)
    if args.quiet:
        print(index)
        return 0
    h, on_val = info.headline, info.selection.on_val
    front_kind = "seed means" if info.confirmed_front else "single runs"
    print(f"{len(info.completed)} completed trials, {len(info.failed)} failed; "
          f"{len(info.front)} points on the frontier ({front_kind}; pareto.csv, recipes/)")
    if len(info.completed):
        test = info.recipe_test_accuracy(h.number) if h.confirmed and on_val else float("nan")
        print(h.verdict + (f"; test acc {test:.2%} at its best budget (held out)" if test == test else ""))
    if h.elsewhere:
        print(info.frontier.elsewhere_text())
    payback = info.frontier.payback.text() if info.frontier.payback is not None and len(info.completed) else ""
    if payback:
        print(payback)
        print(info.frontier.payback.stages_text())
    for warning in info.warnings:
        print(f"note: {warning}")
    print(f"wrote {index}")
    return 0
