"""``recipesearch datasets``: the registered dataset names."""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    del p  # no options


def run(args: argparse.Namespace) -> int:
    from recipesearch.data import list_datasets

    for name in list_datasets():
        print(name)
    return 0
