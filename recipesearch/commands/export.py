"""``recipesearch export RUN_DIR --to DIR [--force]``: copy the frontier recipes of a run to a folder."""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="the --out directory of a search (holds trials.csv)")
    p.add_argument("--to", required=True, metavar="DIR", help="folder to copy recipes/<id>.yaml files into")
    p.add_argument("--force", action="store_true", help="overwrite existing files with different content")


def run(args: argparse.Namespace) -> int:
    from recipesearch.report import export_recipes, load_run
    from recipesearch.report.reconcile import NOTES_KEY

    # trials.csv checked against study.db first (report/reconcile.py); what that did is said, once
    for note in load_run(args.run_dir).run_meta.get(NOTES_KEY) or ():
        print(f"note: {note}")
    paths = export_recipes(args.run_dir, args.to, force=args.force)
    for path in paths:
        print(path)
    print(f"exported {len(paths)} frontier recipe{'s' if len(paths) != 1 else ''} to {args.to}")
    return 0
