"""``recipesearch algorithms``: every registered algorithm, then every optimizer, with defaults and citation."""
from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--module", dest="modules", action="append", default=[], metavar="MODULE",
                   help="also list what this module of your own offers (as recipes name it); repeat for more")


def run(args: argparse.Namespace) -> int:
    import json

    from recipesearch.algorithms import get_algorithm, list_algorithms
    from recipesearch.recipe import OptimizerSpec
    from recipesearch.train.optim import OPTIMIZERS
    from recipesearch.user_entries import module_entries

    rows = []
    user = [entry for module in args.modules for entry in module_entries(module, "algorithm")]
    for name in [*list_algorithms(), *(e for e in user if e not in list_algorithms())]:
        cls = get_algorithm(name)
        rows.append({"name": name, "kind": "algorithm", "defaults": cls.defaults(), "description": cls.description,
                     "citation": cls.citation})
    for name, info in OPTIMIZERS.items():
        spec = OptimizerSpec(name=name).model_dump(mode="json")
        rows.append({"name": name, "kind": "optimizer", "defaults": {k: spec[k] for k in info.fields},
                     "description": info.description, "citation": info.citation})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from rich.console import Console

    console = Console(width=140)
    for kind, title in (("algorithm", "algorithms (recipe: algorithms.<name>)"),
                        ("optimizer", "optimizers (recipe: optimizer.name)")):
        console.print(_table([r for r in rows if r["kind"] == kind], title))
    return 0


def _table(rows: list[dict], title: str):
    from rich.table import Table

    table = Table(title=f"{len(rows)} {title}")
    table.add_column("name", style="bold")
    table.add_column("defaults")
    table.add_column("description")
    for r in rows:
        defaults = ", ".join(f"{k}={v}" for k, v in r["defaults"].items()) or "-"
        table.add_row(r["name"], defaults, f"{r['description']}\n[dim]{r['citation']}[/]")
    return table
