"""``recipesearch algorithms``: every registered algorithm with its defaults and description."""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    import json

    from recipesearch.algorithms import get_algorithm, list_algorithms

    rows = []
    for name in list_algorithms():
        cls = get_algorithm(name)
        rows.append({"name": name, "defaults": cls.defaults(), "description": cls.description,
                     "citation": cls.citation})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(rows)} algorithms")
    table.add_column("name", style="bold")
    table.add_column("defaults")
    table.add_column("description")
    for r in rows:
        defaults = ", ".join(f"{k}={v}" for k, v in r["defaults"].items()) or "-"
        table.add_row(r["name"], defaults, f"{r['description']}\n[dim]{r['citation']}[/]")
    Console(width=140).print(table)
    return 0
