"""``recipesearch models``: the registered model names."""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("pattern", nargs="?", help="shell-style filter, e.g. 'resnet*'")


def run(args: argparse.Namespace) -> int:
    from recipesearch.models import list_models

    for name in list_models(args.pattern):
        print(name)
    print("tv/<name>: any torchvision classification model, e.g. tv/resnet50")
    return 0
