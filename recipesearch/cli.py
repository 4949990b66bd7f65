"""``recipesearch`` command line: parses arguments and hands each subcommand to its module.

Subcommand modules live in ``recipesearch/commands/`` and import heavy libraries (torch, ray) only
inside ``run`` so that ``--help`` and argument errors are instant. Bad input anywhere becomes one line
``error: ...`` on stderr and exit code 2.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from recipesearch.errors import UserError

# name → module in recipesearch.commands; each defines ``add_arguments(parser)`` and ``run(args) -> int``.
COMMANDS = {
    "train": "Train one recipe YAML and report accuracy and training time",
    "init": "Write a starter search space and base recipe for a model and data of your own",
    "search": "Search recipes (algorithms x hyperparameters x budgets) for the accuracy/time Pareto frontier",
    "report": "Rebuild the report (frontier, speedups, plots, HTML) of a search run directory",
    "export": "Copy the frontier recipes of a run directory to another folder",
    "replicate": "Retrain a finished search's claims and its baseline with fresh seeds here; score on test",
    "algorithms": "List the speed-up algorithms with their defaults and descriptions",
    "models": "List the registered models",
    "datasets": "List the registered datasets",
    "spaces": "List the search spaces that ship with recipesearch (search one by its name)",
    "recipes": "List the recipes that ship with recipesearch (train one by its name)",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line and exit 2, like every other bad input
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="recipesearch", description=__doc__.splitlines()[0])
    from recipesearch.version import __version__

    parser.add_argument("--version", action="version", version=f"recipesearch {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    for name, help_text in COMMANDS.items():
        module = importlib.import_module(f"recipesearch.commands.{name}")
        p = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(p)
        p.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
