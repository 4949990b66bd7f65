"""``recipesearch train RECIPE.yaml|NAME [--out DIR] [--set key=value ...]``."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from recipesearch.errors import ConfigError, UserError
from recipesearch.rundir import check_out_dir
from recipesearch.yamlio import parse_yaml


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("recipe", help="recipe YAML file, or the name of a shipped one (recipesearch recipes)")
    p.add_argument("--out", help="directory for result.json and the recipe actually trained")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a field, e.g. --set optimizer.lr=0.2 --set algorithms.mixup.alpha=0.4; "
                        "a new model.name drops the old model's options (give the new ones as model.KEY=...); "
                        "algorithms.NAME=null removes a method, algorithms.NAME={} adds it with its defaults")
    p.add_argument("--force", action="store_true", help="overwrite an existing result.json in --out")
    p.add_argument("--quiet", action="store_true", help="no per-epoch lines")


def parse_overrides(items: list[str]) -> dict[str, object]:
    """``KEY=VALUE`` items as {key: value}, each value read as YAML: ``null``, ``~`` and an empty value are
    None (``algorithms.NAME=null`` removes a method, ``Recipe.with_overrides``; ``{}`` switches it on)."""
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError("--set", f"expected KEY=VALUE, got {item!r}")
        # YAML typing (0.2 is a float), with the recipe file's rules: a bad value is a one-line error
        overrides[key.strip()] = parse_yaml(value, source=f"--set {key.strip()}")[0] if value else None
    return overrides


def recorded_user_code(path: str) -> list[dict]:
    """The user modules an exported recipe's header records; their folders become importable (the recipe
    may be replayed from anywhere)."""
    from recipesearch.plugins import add_search_dir, parse_provenance, user_code_dirs

    try:
        rows = parse_provenance(Path(path).read_text(errors="replace"))
    except OSError:
        return []  # load_recipe says what is wrong with the file
    for folder in user_code_dirs(rows):
        add_search_dir(folder)
    return rows


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from recipesearch.env_info import hardware, library_versions
    from recipesearch.errors import DivergenceError
    from recipesearch.plugins import changed_warning
    from recipesearch.recipe import dump_recipe, load_recipe

    recorded = recorded_user_code(args.recipe)  # an exported recipe's header: the user code it was found with
    recipe = load_recipe(args.recipe)
    if args.overrides:
        overrides = parse_overrides(args.overrides)
        for line in recipe.override_warnings(overrides):
            print(f"warning: {line}", file=sys.stderr)  # even with --quiet: the user asked for it
        recipe = recipe.with_overrides(overrides)
    out = Path(args.out) if args.out else None
    if out is not None:
        check_out_dir(out)  # before training: a result must never be lost to an unwritable --out
    if out is not None and (out / "result.json").exists() and not args.force:
        raise UserError(f"--out: {out / 'result.json'} exists; pass --force to overwrite or choose another --out")

    console = Console(stderr=True, quiet=args.quiet)
    changed = changed_warning(recorded, "this recipe was exported")
    if changed:
        print(changed, file=sys.stderr)  # even with --quiet: the result may not be the recipe's

    def on_epoch_end(state, metrics):
        console.print(f"epoch {metrics['epoch'] + 1}: step {metrics['step']}/{state.total_steps} "
                      f"loss {metrics['loss']:.4f}")

    from recipesearch.train.loop import Trainer

    trainer = Trainer(recipe, on_epoch_end=on_epoch_end)
    try:
        result = trainer.fit()
    except DivergenceError as exc:
        raise UserError(f"training {exc}; lower optimizer.lr or check the recipe") from None
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    record = {"recipe": recipe.to_dict(), **result.to_dict(), "hardware": hardware(), "versions": library_versions()}
    _print_table(result)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "recipe.yaml").write_text(dump_recipe(recipe))
        tmp = out / "result.json.tmp"
        tmp.write_text(json.dumps(record, indent=2))
        tmp.replace(out / "result.json")  # atomic: a killed run never leaves half a result
        print(f"wrote {out / 'result.json'}")
    return 0


def _print_table(result) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"recipe {result.recipe_id}", show_header=True)
    for col in ("accuracy", "train_seconds", "images/s", "data wait", "epochs", "steps", "eval s"):
        table.add_column(col, justify="right")
    table.add_row(f"{result.accuracy:.4f}", f"{result.train_seconds:.2f}", f"{result.throughput:.0f}",
                  f"{result.data_wait_fraction:.1%}", f"{result.epochs:.2f}", str(result.steps),
                  f"{result.eval_seconds:.2f}" if result.eval_seconds is not None else "-")
    Console().print(table)
