"""``recipesearch datasets``: the registered dataset names."""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--module", dest="modules", action="append", default=[], metavar="MODULE",
                   help="also list what this module of your own offers (as recipes name it); repeat for more")


def run(args: argparse.Namespace) -> int:
    from recipesearch.commands.models import print_user_entries
    from recipesearch.data import list_datasets

    for name in list_datasets():
        print(name)
    print_user_entries(args.modules, "dataset")
    return 0
