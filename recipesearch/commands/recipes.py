"""``recipesearch recipes``: the recipes that ship with the package, by the name ``train`` takes."""
from __future__ import annotations

import argparse

from recipesearch.commands import spaces


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    return spaces.run(args, kind="recipe")
