"""``recipesearch models``: the registered model names."""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("pattern", nargs="?", help="shell-style filter, e.g. 'resnet*'")
    p.add_argument("--module", dest="modules", action="append", default=[], metavar="MODULE",
                   help="also list what this module of your own offers (as recipes name it); repeat for more")


def print_user_entries(modules: list[str], kind: str) -> None:
    """Each module's entries of ``kind`` (``user_entries.module_entries``), one a line."""
    from recipesearch.user_entries import module_entries

    for module in modules:
        for entry in module_entries(module, kind):
            print(entry)


def run(args: argparse.Namespace) -> int:
    from recipesearch.models import list_models

    for name in list_models(args.pattern):
        print(name)
    print("tv/<name>: any torchvision classification model, e.g. tv/resnet50")
    print_user_entries(args.modules, "model")
    return 0
