"""``recipesearch export RUN_DIR --to DIR [--force]``: copy the frontier recipes of a run to a folder."""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="the --out directory of a search (holds trials.csv)")
    p.add_argument("--to", required=True, metavar="DIR", help="folder to copy recipes/<id>.yaml files into")
    p.add_argument("--force", action="store_true", help="overwrite existing files with different content")


def run(args: argparse.Namespace) -> int:
    from recipesearch.report import build_info, export_recipes, load_run
    from recipesearch.report.reconcile import NOTES_KEY

    # read (trials.csv checked against study.db: report/reconcile.py) and analysed once; what the check did is said
    files = load_run(args.run_dir)
    for note in files.run_meta.get(NOTES_KEY) or ():
        print(f"note: {note}")
    paths = export_recipes(args.run_dir, args.to, force=args.force, info=build_info(*files, run_dir=args.run_dir))
    for path in paths:
        print(path)
    print(f"exported {len(paths)} frontier recipe{'s' if len(paths) != 1 else ''} to {args.to}")
    return 0
