"""``recipesearch spaces``: the search spaces that ship with the package, by the name ``search`` takes."""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace, kind: str = "space") -> int:
    from recipesearch.shipped import FOLDERS, describe

    rows = describe(kind)
    width = max(len(name) for name, _ in rows)
    for name, text in rows:
        print(f"{name:<{width}}  {text}")
    use = "recipesearch search NAME --out DIR" if kind == "space" else "recipesearch train NAME"
    print(f"\n{use}; the files are in {FOLDERS[kind]} (copy one to edit it)")
    return 0
