"""``recipesearch init --model M --data D --out space.yaml [--hours H] [--lr X] [--batch-size N] [--epochs E]
[--set KEY=VALUE ...] [--plugin MODULE] [--force]``: a starter search space, and its base recipe beside it, for a
model and data of one's own (a registered name or ``module:attribute``).

What it writes fits the model and the machine, so the space searches without edits:

- the candidate methods are ``CANDIDATES``, each applied to the model first as a search does before its first
  trial (``engine.method_fit``: the model built for the data and the method's surgery, no step trained); one that
  cannot apply is left out, with its reason as a comment;
- one epoch of the base recipe is trained here, as a trial trains it (one thread on the CPU, or the GPU), and the
  base's epochs and the space's ``search_budget`` (in trainings of the baseline at budget 1) are sized from it so
  that the whole search, every stage, fits ``--hours`` with ``concurrency`` trials at a time;
- the base's precision is measured too: an epoch in bf16 first (its warm-up counts against it), then the fp32
  one; bf16 where it is faster (a GPU, a CPU with AMX), since a strong baseline has mixed precision where it
  pays, and the searched speedups are then not mixed precision's;
- the LR and batch size are the ones given, else the recipe's defaults; without ``--lr`` the search sweeps it
  first (``baseline.tune_lr``).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import Any

from recipesearch.commands.search import positive_number
from recipesearch.commands.train import parse_overrides
from recipesearch.errors import UserError

# method: (its space entry, why a search tries it). Flip-based methods are not here: a mirrored digit or letter
# is another class, which init cannot know; add them by hand where mirroring keeps the label.
CANDIDATES: dict[str, tuple[str, str]] = {
    "label_smoothing": ("{smoothing: {range: [0.05, 0.2]}}", "softer targets; costs nothing"),
    "mixup": ("{alpha: {range: [0.1, 1.0]}}", "blends image pairs; pays off at long budgets"),
    "cutmix": ("{alpha: {range: [0.25, 1.0]}}", "pastes a box across images; never with mixup"),
    "cutout": ("{length_fraction: {range: [0.25, 0.5]}}", "zeroes a square of each image; cheap"),
    "brightness_contrast": ("{brightness: {range: [0.1, 0.4]}, contrast: {range: [0.1, 0.4]}}",
                            "per-image brightness/contrast jitter, on the batch"),
    "progressive_resizing": ("{initial_scale: {choices: [0.5, 0.75]}}", "small images first: cheaper early steps"),
    "blurpool": ("{}", "blur before strided convs: shift-invariant, some cost"),
    "channels_last": ("{}", "NHWC memory layout: a GPU speed-up, measured here too"),
    "ema": ("{half_life: {scale: [0.5, 2]}}", "evaluates a moving average of the weights"),
    "sam": ("{interval: {choices: [2, 5, 10]}, rho: {scale: [0.5, 2]}}", "sharpness-aware steps; cost 1 + 1/interval"),
    "stochastic_depth": ("{drop_rate: {range: [0.05, 0.2]}}", "skips residual blocks at random: cheaper steps"),
    "layer_freezing": ("{freeze_start: {range: [0.3, 0.7]}}", "freezes early layers late on: cheaper backward"),
    "lookahead": ("{alpha: {range: [0.3, 0.8]}}", "pulls toward slow weights every k steps"),
}
BF16_MARGIN = 0.95  # bf16 goes in the base where its epoch took less than this share of fp32's
BUDGETS = (0.5, 1, 2)  # x the base's epochs: a curve each side of today's training
OVERHEAD = 0.8  # the share of the hours left for trials: the driver's start-up, stage changes and report take the rest
# Seconds a trial costs beside its training on Ray (scheduling, reporting, its result written): 65 s over the 63
# trials of the digits demo (2026-11-28); the trial's own evaluation and model build are measured with the epoch.
TRIAL_SECONDS = 1.0
SEARCH_SHARE = 2.5  # a search budget of at least 2.5x what the baseline alone takes: room to propose and confirm


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="a registered model (recipesearch models) or module:attribute")
    p.add_argument("--data", required=True, help="a registered dataset (recipesearch datasets) or module:attribute")
    p.add_argument("--out", required=True, metavar="SPACE.yaml",
                   help="the space to write; its base recipe goes beside it as <name>_base.yaml")
    p.add_argument("--hours", type=positive_number, default=1.0, metavar="H",
                   help="the whole search's wall-clock time on this machine (default 1)")
    p.add_argument("--lr", type=positive_number, metavar="X", help="the base LR (default: swept by the search)")
    p.add_argument("--batch-size", type=int, metavar="N", help="the base batch size (default 128)")
    p.add_argument("--epochs", type=positive_number, metavar="E",
                   help="epochs of today's training, budget 1 (default: at most 10, fewer where --hours needs it)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="a base-recipe field, e.g. --set model.width=32 --set data.fraction=0.1")
    p.add_argument("--plugin", dest="plugins", action="append", default=[], metavar="MODULE",
                   help="a module of your own to import first (its register_* calls); pass it to search too")
    p.add_argument("--force", action="store_true", help="overwrite the space and base recipe files")


def run(args: argparse.Namespace) -> int:
    from recipesearch.plugins import add_search_dir, import_plugins

    out = Path(args.out)
    base_path = out.with_name(f"{out.stem}_base.yaml")
    for path in (out, base_path):
        if path.exists() and not args.force:
            raise UserError(f"--out: {path} exists; pass --force to overwrite it or choose another --out")
    if args.batch_size is not None and args.batch_size <= 0:
        raise UserError(f"--batch-size: must be a whole number > 0, got {args.batch_size}")
    add_search_dir(Path.cwd())  # module:attribute names import from here, and from the space's folder at search
    add_search_dir(out.parent)
    import_plugins(args.plugins, field="--plugin")

    import torch

    gpu = torch.cuda.is_available()
    concurrency = torch.cuda.device_count() if gpu else max(1, os.cpu_count() or 1)
    base = _base(args, gpu)
    fixed = "precision" in parse_overrides(args.overrides)
    base["precision"], epoch_seconds, trial_seconds, precision_note = _precision_and_epoch(base, fixed)
    epochs, trainings = _size(args, epoch_seconds, trial_seconds + TRIAL_SECONDS, concurrency)
    base["max_duration"] = epochs
    fitting, left_out = _methods(base)

    out.parent.mkdir(parents=True, exist_ok=True)
    base_path.write_text(_base_yaml(base, args, epoch_seconds, precision_note))
    out.write_text(_space_yaml(base_path.name, fitting, left_out, args, epochs, trainings, epoch_seconds,
                               concurrency, gpu))
    from recipesearch.space import load_space

    load_space(out)  # what it wrote loads as the search will read it
    plugins = "".join(f" --plugin {m}" for m in args.plugins)
    print(f"wrote {out} and {base_path}: {len(fitting)} methods, {len(left_out)} left out "
          f"({', '.join(left_out) or 'none'}); {epochs:g} epoch(s) at budget 1 (one epoch took {epoch_seconds:.1f} s), "
          f"search_budget {trainings} trainings, about {args.hours:g} h with {concurrency} at a time\n"
          f"next: recipesearch search {out}{plugins} --out runs/{out.stem}")
    return 0


def _base(args: argparse.Namespace, gpu: bool) -> dict[str, Any]:
    """The base recipe as a mapping: a strong plain baseline (SGD + Nesterov, decoupled weight decay, a cosine
    decay stepped every batch), no speed-up methods, the user's --set fields on top."""
    from recipesearch.recipe import recipe_from_dict, set_dotted

    def stem(name: str) -> str:
        return name.rsplit(":", 1)[-1].rsplit("/", 1)[-1]

    base: dict[str, Any] = {
        "name": f"{stem(args.model)}-{stem(args.data)}",
        "model": {"name": args.model}, "data": {"name": args.data, "val_fraction": 0.1},
        "optimizer": {"name": "sgd", "lr": args.lr or 0.1, "momentum": 0.9, "nesterov": True,
                      "weight_decay": 5.0e-4},
        "schedule": {"name": "cosine", "warmup_epochs": 0.0},
        "max_duration": args.epochs or 10, "batch_size": args.batch_size or 128,
        "precision": "fp32", "seed": 0, "threads": None if gpu else 1, "algorithms": {},
    }
    for key, value in parse_overrides(args.overrides).items():
        set_dotted(base, key, value)
    recipe_from_dict(base, source="recipesearch init")  # a bad name or --set is one line here, before training
    return base


def _precision_and_epoch(base: dict[str, Any], fixed: bool) -> tuple[str, float, float, str]:
    """(the base's precision, its epoch's seconds, the rest of that run's seconds, why that precision): the
    faster of one epoch in bf16 and one in fp32 (module docstring), unless ``fixed`` by --set; bf16 that fails
    here is fp32."""
    if fixed:
        return base["precision"], *_one_epoch(base), "--set"
    try:
        bf16 = _one_epoch({**base, "precision": "bf16"})
    except Exception as exc:  # noqa: BLE001 - a device without bf16 autocast trains in fp32
        bf16, why = None, f"bf16 failed here ({type(exc).__name__})"
    fp32 = _one_epoch({**base, "precision": "fp32"})
    if bf16 is not None and bf16[0] < BF16_MARGIN * fp32[0]:
        return "bf16", *bf16, f"bf16: an epoch took {bf16[0]:.1f} s here, {fp32[0]:.1f} s in fp32"
    if bf16 is not None:
        why = f"bf16 took {bf16[0]:.1f} s an epoch here, {fp32[0]:.1f} s in fp32"
    return "fp32", *fp32, f"fp32: {why}"


def _one_epoch(base: dict[str, Any]) -> tuple[float, float]:
    """(seconds one epoch of the base recipe trains, as a trial trains it (``train_seconds``: no evaluation);
    seconds the rest of that run took: building the model, evaluating it)."""
    import time

    from recipesearch.recipe import recipe_from_dict
    from recipesearch.train.loop import Trainer

    recipe = recipe_from_dict({**base, "max_duration": 1, "schedule": {"name": "cosine"}}, source="recipesearch init")
    print(f"training one epoch of {recipe.model.name} on {recipe.data.name} in {recipe.precision} to size the "
          "search ...", file=sys.stderr)
    started = time.perf_counter()
    result = Trainer(recipe).fit()
    return result.train_seconds, max(0.0, time.perf_counter() - started - result.train_seconds)


def _size(args: argparse.Namespace, epoch_seconds: float, per_trial: float, concurrency: int) -> tuple[float, int]:
    """(epochs at budget 1, search budget in trainings of the baseline at budget 1) that fit --hours: each training
    takes its epochs plus ``per_trial`` seconds (the trial's evaluation, model and scheduling)."""
    seconds = args.hours * 3600 * concurrency * OVERHEAD
    floor = SEARCH_SHARE * _minimum_trainings()
    fitted = (seconds / floor - per_trial) / epoch_seconds  # the most epochs a training may take
    if args.epochs is not None and args.epochs > fitted or fitted < 1:
        epochs = args.epochs or 1
        need = floor * (epochs * epoch_seconds + per_trial) / (3600 * concurrency * OVERHEAD)
        raise UserError(f"--hours: {args.hours:g} h cannot hold a search at {epochs:g} epoch(s) of "
                        f"{epoch_seconds:.1f} s with {concurrency} at a time: at least {need:.2g} h"
                        + (", or fewer --epochs" if args.epochs else ""))
    epochs = args.epochs or min(10, math.floor(fitted))
    return epochs, math.floor(seconds / (epochs * epoch_seconds + per_trial))


def _baseline_seeds(budget: float) -> int:
    """3 seeds at budgets 0.5 and 1, where the target is read; one at 2, which only draws the baseline's curve
    (``baseline.seeds_elsewhere``: 4 trainings of the baseline saved)."""
    from recipesearch.analysis.target import baseline_seeds

    return baseline_seeds(budget, list(BUDGETS), 3, 1)


def _minimum_trainings() -> float:
    """Trainings of the baseline at budget 1 that the LR sweep and the baseline's seeds take at ``BUDGETS``."""
    return 3 + sum(_baseline_seeds(b) * b for b in BUDGETS)


def _methods(base: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """(candidate methods that apply to the model, {left out: why})."""
    import yaml

    from recipesearch.engine.method_fit import unfit_methods
    from recipesearch.space.loading import space_from_dict

    left_out = {name: "already in the base recipe" for name in base["algorithms"] if name in CANDIDATES}
    tried = {name: yaml.safe_load(entry) for name, (entry, _) in CANDIDATES.items() if name not in left_out}
    space = space_from_dict({"base": base, "budgets": list(BUDGETS), "algorithms": tried}, "recipesearch init")
    left_out.update(unfit_methods(space))
    return [name for name in CANDIDATES if name not in left_out], left_out


def _line(text: str, comment: str, width: int = 56) -> str:
    return f"{text:<{width}} # {comment}\n"


def _base_yaml(base: dict[str, Any], args: argparse.Namespace, epoch_seconds: float, precision_note: str) -> str:
    import yaml

    def flow(value: Any) -> str:
        text = yaml.safe_dump(value, default_flow_style=True, width=10_000, sort_keys=False)
        return text.strip().removesuffix("\n...")

    lr = "--lr" if args.lr else "swept by the search (0.5x / 1x / 2x) before the baseline"
    comments = {
        "name": "the base recipe's name in the report",
        "model": "the model: options beside its name go to its factory",
        "data": "the data; val_fraction: 10 % of train held out, what the search selects on (test is only reported)",
        "optimizer": f"SGD + Nesterov, decoupled weight decay; lr: {lr}",
        "schedule": "cosine decay; each budget dilates it with the epochs",
        "max_duration": f"epochs at budget 1 (one epoch took {epoch_seconds:.1f} s here), sized to --hours",
        "batch_size": "--batch-size" if args.batch_size else "the default; give --batch-size for another",
        "precision": precision_note,
        "seed": "the seeds of the baseline's replicates count up from here",
        "threads": "torch threads a trial uses, as the search runs it",
        "algorithms": "the baseline has no speed-up method: the space switches them on",
    }
    lines = ["# A base recipe written by `recipesearch init`: today's training, which the search's speedups are\n",
             "# measured against. Edit it to match how you train now (`recipesearch train` it to check).\n"]
    for key, value in base.items():
        if value is None:
            continue
        lines.append(_line(f"{key}: {flow(value)}", comments.get(key, "from --set")))
    return "".join(lines)


def _space_yaml(base_name: str, fitting: list[str], left_out: dict[str, str], args: argparse.Namespace,
                epochs: float, trainings: int, epoch_seconds: float, concurrency: int, gpu: bool) -> str:
    baseline_runs = sum(_baseline_seeds(b) for b in BUDGETS) + (0 if args.lr else 3)
    # proposals: what the budget holds after the baseline and the confirmation's half, at their mean budget
    proposals = max(8, math.floor((trainings * 0.5 - _minimum_trainings()) / (sum(BUDGETS) / len(BUDGETS))))
    lines = [
        f"# A search space written by `recipesearch init --model {args.model} --data {args.data} "
        f"--hours {args.hours:g}`.\n",
        "# Every candidate method below was applied to this model first; those left out say why at the end.\n",
        _line(f"name: {Path(args.out).stem}", "the search's name in the report"),
        _line(f"base: {base_name}", "the base recipe, beside this file: the baseline"),
        _line(f"budgets: {list(BUDGETS)}", f"x {epochs:g} epochs; the schedule is dilated with the budget"),
        _line("objectives: [accuracy, train_seconds]", "the front: accuracy against training time"),
        _line("metric_split: val", "select on the validation split; test accuracy is only reported"),
        _line("target: baseline", "the headline: speedup to the baseline's accuracy at budget 1"),
        _line(f"search_budget: {trainings}",
              f"trainings of the baseline at budget 1 (~{epochs * epoch_seconds:.0f} s each): about "
              f"{args.hours:g} h in all"),
        _line("sampler: {name: tpe, seed: 0, n_startup_trials: 8}", "multi-objective TPE after 8 random proposals"),
        _line(f"trials: {baseline_runs + proposals}", f"{baseline_runs} baseline runs and up to {proposals} proposals"),
        _line(f"baseline: {{seeds: 3, seeds_elsewhere: 1, tune_lr: {'false' if args.lr else 'true'}}}",
              "3 seeds at 0.5 and 1, where the target is read; 1 at 2" + ("" if args.lr else "; the LR swept first")),
        _line("confirm: {top_k: 3, seeds: 3, max_share: 0.5, sequential: true}",
              "the best proposals again with 3 seeds, a 4th while undecided"),
        _line(f"concurrency: {concurrency}", "trials at a time: " + ("one a GPU" if gpu else "one a core")),
        _line(f"resources: {{cpus: 1, gpus: {1 if gpu else 0}}}", "what Ray gives each trial"),
        _line(f"threads_per_trial: {1 if not gpu else 'null'}", "torch threads a trial trains with"),
        _line("seed: 0", "the search's seed: the same file searches the same way"),
        _line("hparams:", "searched around the base's values"),
        _line("  optimizer.lr: {scale: [0.5, 2]}", "0.5x-2x of the base LR, log scale"),
        _line("  optimizer.weight_decay: {grid: [0.5, 1, 2]}", "x the base's weight decay"),
        _line("algorithms:", "each switched on or off by the sampler"),
    ]
    lines += [_line(f"  {name}: {CANDIDATES[name][0]}", CANDIDATES[name][1]) for name in fitting]
    lines += [f"# left out: {name}: {why}\n" for name, why in left_out.items()]
    return "".join(lines)
