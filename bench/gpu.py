"""The GPU path, on a lent GPU machine: one prepared script that runs in one go in under 9 minutes (issue 30, GPU
items 4-7), each section saved as it finishes.

    python -m bench.gpu                      # the plan below on the GPU -> reports/bench/gpu.json (merged)
    python -m bench.gpu --results $OUT/gpu.json --budget-seconds 540
    python -m bench.gpu --dry-run            # every section on CPU stand-ins, tiny, 1-2 min -> a temp file
    python -m bench.gpu --only reproduction  # some sections (also the earlier ones: side_by_side, fashion_mnist,
                                             # method_costs, cuda_tests), merged into the saved results
    python -m bench.gpu_carry                # here, before a device run: the wheels and the data it carries

No CIFAR-10 reaches the lent machine, so every section trains on Fashion-MNIST shaped as CIFAR-10 (60000 train,
10000 test, 32x32 RGB; ``bench/gpu_data.py``), written once in our ``cifar10`` layout and airbench's. Sections,
in the order they run (each module's docstring says how it measures):
- ``overhead`` (``gpu_overhead``): Trainer vs a bare loop, ResNet-9 and airbench94, bf16, channels_last, CUDA
  events; with 0 and 10 no-op method hooks. Keys ``overhead.trainer_vs_bare`` and ``overhead.with_hooks``.
- ``reproduction`` (``gpu_repro``): recipes/cifar10_airbench94.yaml vs airbench's own train94, 5 seeds a side,
  alternating; torch.compile (and CUDA graphs) on and off. Keys ``reproduction.time_to_94_ratio`` and
  ``reproduction.max_accuracy_gap_pp``.
- ``packing`` (``gpu_search``): 1, 2 and 4 trials per GPU: images/s per trial and in total, GPU utilisation.
  Key ``packing`` (one entry per trials-per-GPU).
- ``search`` (``gpu_search``): the airbench94 space cut to fit, confirmation on; its best recipe vs airbench,
  3 fresh seeds a side. Key ``search.best_time_to_94_vs_airbench``.
- ``cuda_tests`` (``gpu_extra``): the tests whose CUDA cases skip on CPU machines, when time is left.

The time plan (``PLAN``, printed first): each section has a planned number of seconds; a section may use what
the sections before it left unused, but never the time planned for the required sections after it; a section
that would not get half its plan is skipped and says so, and inside a section a seed, round or level that would
overrun is not started (the section records what it left out). ``--dry-run`` runs the same code on the CPU at
tiny sizes (``SIZES["dry"]``: 512 images, tiny widths, 1-2 epochs and seeds, packing of 1 trial per process),
airbench's side by its CPU stand-in (``gpu_airbench.STANDIN_SERVER``), and writes a temporary results file.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import BENCH_DIR, ROOT, environment, write_json

NAME = "gpu"
SOURCE = f"bench:{NAME}"
TITLE = "GPU path: Trainer overhead, airbench94 reproduced beside airbench, packed search, on a lent GPU"
NEEDS_CUDA = True  # bench.run_all skips it elsewhere, keeping the previous results
RESULTS = BENCH_DIR / "gpu.json"
DRY_RESULTS = Path(tempfile.gettempdir()) / "recipesearch-gpu-dry-run.json"
BUDGET = {"gpu": 540.0, "dry": 420.0}  # seconds for the whole script: 9 minutes on the GPU
EPOCHS = [3.0, 4.0, 5.0, 7.0]  # around 94 %: on these images airbench's train94 gets there at about 4 epochs
SIZES: dict[str, dict[str, Any]] = {
    "gpu": {
        "data": {"n_train": None, "n_test": None},
        "recipe": {},  # our recipes as they are
        "overhead": {"nets": {"resnet9": {"name": "resnet9"}, "airbench94": {"name": "airbench94"}}, "steps": 60,
                     "batch": 1024, "repeats": 5, "precision": "bf16"},
        "reproduction": {"epochs": EPOCHS, "seeds": 5, "compile_epochs": 4.0, "compile_seeds": 2,
                         "compile_modes": {"torch.compile": {}, "torch.compile + CUDA graphs": {"mode": "reduce-overhead"}},
                         "compile_estimate": 90.0, "compile_reserve": 100.0, "compile_eval_batch": 2000},
        "packing": {"levels": [1, 2, 4], "budget": 0.4, "trials_per_process": 2, "ray_trials": 2, "budgets": [0.4],
                    "baseline_seeds": 1, "confirm_seeds": 2},
        "search": {"budgets": [0.4, 0.6], "baseline_seeds": 2, "proposals": 4, "confirm_seeds": 2,
                   "versus_epochs": EPOCHS, "versus_seeds": 3, "versus_reserve": 55.0},
    },
    "dry": {
        "data": {"n_train": 512, "n_test": 128},
        "recipe": {"model": {"name": "airbench94", "widths": [8, 16, 16]}, "batch_size": 128, "precision": "fp32",
                   "eval_batch_size": 128, "algorithms": {"patch_whitening": {"n_images": 256}}},
        "overhead": {"nets": {"resnet9": {"name": "resnet9", "width": 4},
                              "airbench94": {"name": "airbench94", "widths": [8, 16, 16]}},
                     "steps": 3, "batch": 32, "repeats": 2, "precision": "fp32"},
        "reproduction": {"epochs": [1.0, 2.0], "seeds": 2, "compile_epochs": 1.0, "compile_seeds": 1,
                         "compile_modes": {"torch.compile (eager backend)": {"backend": "eager"},
                                           "torch.compile + CUDA graphs": {"mode": "reduce-overhead"}},
                         "compile_estimate": 10.0, "compile_reserve": 15.0, "compile_eval_batch": 256},
        "packing": {"levels": [1, 2], "budget": 0.1, "trials_per_process": 1, "ray_trials": 1, "budgets": [0.1],
                    "baseline_seeds": 1, "confirm_seeds": 2, "threads": 1},
        "search": {"budgets": [0.1, 0.2], "baseline_seeds": 1, "proposals": 2, "confirm_seeds": 2, "threads": 1,
                   "versus_epochs": [1.0, 2.0], "versus_seeds": 1, "versus_reserve": 15.0},
    },
}
QUICK = {"overhead": {"repeats": 3}, "reproduction": {"seeds": 3, "compile_seeds": 1}, "search": {"versus_seeds": 2}}
# planned seconds per section (setup: imports, the images written in both layouts); required sections keep theirs
PLAN = {"gpu": {"setup": 20, "overhead": 50, "reproduction": 220, "packing": 80, "search": 130, "cuda_tests": 40},
        "dry": {"setup": 15, "overhead": 30, "reproduction": 40, "packing": 60, "search": 60, "cuda_tests": 0}}
DEFAULT = ("overhead", "reproduction", "packing", "search", "cuda_tests")
clock = time.perf_counter  # the plan's clock (tests drive a fake one)
REQUIRED = ("overhead", "reproduction", "packing", "search")


class Context:
    """What the sections share: device, sizes, the images in both layouts, the clock, airbench's child."""

    def __init__(self, dry: bool, sizes: dict[str, Any], budget: float, workdir: Path, packing: str,
                 log: Callable[[str], None] = print):
        import torch

        from bench import gpu_data

        self.t0 = clock()
        self.deadline = self.t0 + budget
        self.dry, self.sizes, self.workdir, self.log = dry, sizes, workdir, log
        self.cuda = torch.cuda.is_available() and not dry
        self.device = "cuda" if self.cuda else "cpu"
        images, self.data_what = gpu_data.images(sizes["data"]["n_train"], sizes["data"]["n_test"], synthetic_ok=dry)
        self.data_dir = workdir / "data"
        gpu_data.write_both(self.data_dir, images)
        from bench.gpu_search import ray_problem

        self.packing = ("ray" if self.cuda and ray_problem() is None else "processes") if packing == "auto" else packing
        self._child: Any = None
        self._child_reason: str | None = None

    def left(self) -> float:
        return self.deadline - clock()

    def recipe(self, path: str, val_fraction: float) -> dict[str, Any]:
        """A recipe file of this repo as a dict: its data where this script wrote it, this device, the sizes' edits."""
        from recipesearch.recipe import load_recipe

        data = load_recipe(ROOT / path).to_dict()
        edits = self.sizes["recipe"]
        data.update({k: v for k, v in edits.items() if k != "algorithms"}, device=self.device)
        data["algorithms"] = {k: {**v, **edits.get("algorithms", {}).get(k, {})} for k, v in data["algorithms"].items()}
        data["data"] = {**data["data"], "root": str(self.data_dir), "val_fraction": val_fraction}
        if self.dry:
            data["threads"] = 1
        return data

    def airbench(self) -> tuple[Any, str | None]:
        """airbench's child (started on first use, kept for the run; the CPU stand-in on a dry run), or why not."""
        from bench.gpu_airbench import AirbenchChild, unavailable_reason

        if self._child is None and self._child_reason is None:
            self._child_reason = unavailable_reason(stand_in=self.dry)
            if self._child_reason is None:
                self._child = AirbenchChild(self.data_dir, stand_in=self.dry)
        return self._child, self._child_reason

    def close(self) -> None:
        if self._child is not None:
            self._child.close()


def _overhead(ctx: Context, left: Callable[[], float]) -> dict[str, Any]:
    from bench.gpu_overhead import measure

    s = ctx.sizes["overhead"]
    data = {"name": "cifar10", "root": str(ctx.data_dir), "val_fraction": 0.0}
    return measure(s["nets"], data, s["steps"], s["batch"], s["repeats"], ctx.device, s["precision"], left, ctx.log)


def _reproduction(ctx: Context, left: Callable[[], float]) -> dict[str, Any]:
    from bench.gpu_repro import reproduction

    ours = ctx.recipe("recipes/cifar10_airbench94.yaml", val_fraction=0.0)
    child, reason = ctx.airbench()
    return {"recipe": "recipes/cifar10_airbench94.yaml", "data": ctx.data_what,
            **reproduction(ours, child, reason, ctx.sizes["reproduction"], ctx.cuda, left, ctx.log)}


def _packing(ctx: Context, left: Callable[[], float]) -> dict[str, Any]:
    from bench.gpu_search import packing

    base = ctx.recipe("recipes/cifar10_airbench94.yaml", val_fraction=0.1)
    return packing(base, {**ctx.sizes["search"], **ctx.sizes["packing"]}, ctx.packing, ctx.cuda, ctx.workdir, left,
                   ctx.log)


def _search(ctx: Context, left: Callable[[], float], packed: dict[str, Any] | None = None) -> dict[str, Any]:
    from bench.gpu_airbench import alternate
    from bench.gpu_search import best_level, search

    s = ctx.sizes["search"]
    base = ctx.recipe("recipes/cifar10_airbench94.yaml", val_fraction=0.1)
    k = best_level(packed or {}) if ctx.packing == "ray" else 1
    child, reason = ctx.airbench()

    def versus(recipe: dict[str, Any]) -> dict[str, Any]:
        from bench.common import fit_or_nan
        from bench.gpu_airbench import at_epochs

        mine = {**recipe, "data": {**recipe["data"], "val_fraction": 0.0}, "device": ctx.device}
        seeds = [9700 + i for i in range(s["versus_seeds"])]
        got = alternate(lambda e, seed: fit_or_nan(at_epochs(mine, e, seed), SOURCE), child, list(s["versus_epochs"]),
                        seeds, left, ctx.log)
        return {**got, "airbench": {"skipped": reason} if child is None else child.info}

    return search(base, s, ctx.cuda, ctx.workdir / "search", ctx.packing, k, versus, left, ctx.log)


def _cuda_tests(ctx: Context, left: Callable[[], float]) -> dict[str, Any]:
    if not ctx.cuda:
        return {"skipped": "needs CUDA (its cases skip on a CPU machine)"}
    from bench.gpu_extra import run_cuda_tests

    return run_cuda_tests()


def _extra(name: str) -> Callable[[Context, Callable[[], float]], dict[str, Any]]:
    def section(ctx: Context, left: Callable[[], float]) -> dict[str, Any]:
        from bench import gpu_extra

        n = ctx.sizes["reproduction"]["seeds"] if ctx.sizes.get("seeds_override") else gpu_extra.SEEDS
        if name == "side_by_side":
            return gpu_extra.side_by_side(n)
        if name == "fashion_mnist":
            return {**gpu_extra.fashion_mnist_speedups(n), "seeds": n}
        return gpu_extra.method_costs(2)

    return section


# key -> (what the log says, the measurement); DEFAULT is the 9-minute plan, the others run by --only
SECTIONS: dict[str, tuple[str, Callable[..., dict[str, Any]]]] = {
    "overhead": ("Trainer vs a bare loop", _overhead),
    "reproduction": ("recipes/cifar10_airbench94.yaml beside airbench's train94", _reproduction),
    "packing": ("trials packed per GPU", _packing),
    "search": ("a search of the airbench94 space, its best recipe beside airbench", _search),
    "cuda_tests": ("CUDA tests", _cuda_tests),
    "side_by_side": ("our ResNet-9 CIFAR-10 recipe beside airbench's (earlier section)", _extra("side_by_side")),
    "fashion_mnist": ("Fashion-MNIST (earlier section)", _extra("fashion_mnist")),
    "method_costs": ("what each method costs on the GPU (earlier section)", _extra("method_costs")),
}


def sizes_for(dry: bool, quick: bool = False, seeds: int | None = None) -> dict[str, Any]:
    sizes = json.loads(json.dumps(SIZES["dry" if dry else "gpu"]))
    for key, edits in (QUICK.items() if quick and not dry else ()):
        sizes[key].update(edits)
    if seeds:
        sizes["reproduction"]["seeds"], sizes["seeds_override"] = seeds, True
    return sizes


def plan_lines(keys: list[str], plan: dict[str, float], budget: float, sizes: dict[str, Any]) -> list[str]:
    """The time plan as printed before anything runs."""
    total = plan.get("setup", 0) + sum(plan.get(k, 0) for k in keys)
    rows = [f"  {'setup':<13}{plan.get('setup', 0):>5.0f} s  imports, the images in both layouts"]
    for k in keys:
        what = {"overhead": lambda s: f"{len(s['nets'])} nets x 3 arms x {s['repeats']} rounds of {s['steps']} steps",
                "reproduction": lambda s: f"{s['seeds']} seeds x 2 sides x epochs {s['epochs']}; compile "
                                          f"{list(s['compile_modes'])} at {s['compile_epochs']:g} epochs",
                "packing": lambda s: f"{s['levels']} trials per GPU",
                "search": lambda s: f"budgets {s['budgets']}, {s['proposals']} proposals, confirmation "
                                    f"{s['confirm_seeds']} seeds; vs airbench {s['versus_seeds']} seeds"}
        detail = what[k](sizes[k]) if k in what else ("optional: runs if the time is left" if k not in REQUIRED else "")
        rows.append(f"  {k:<13}{plan.get(k, 0):>5.0f} s  {detail}")
    return [f"[{NAME}] time plan: {total:.0f} s planned of {budget:.0f} s", *rows]


def run(quick: bool = False, seeds: int | None = None, only: list[str] | None = None,
        on_section: Callable[[dict[str, Any]], None] | None = None, dry_run: bool = False,
        budget: float | None = None, packing: str = "auto", previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """The sections of ``only`` (else the plan's), each saved through ``on_section`` as it finishes, merged into
    ``previous`` (default: the saved results, so ``bench.run_all`` keeps the sections it did not run)."""
    import torch

    if not dry_run and not torch.cuda.is_available():
        raise RuntimeError("bench.gpu needs a CUDA device (run it on a GPU machine, or --dry-run); "
                           "previous results kept")
    mode = "dry" if dry_run else "gpu"
    sizes, plan = sizes_for(dry_run, quick, seeds), PLAN[mode]
    budget = budget or BUDGET[mode]
    keys = list(only or DEFAULT)
    for line in plan_lines(keys, plan, budget, sizes):
        print(line, flush=True)
    previous = _previous(DRY_RESULTS if dry_run else RESULTS, dry_run, only) if previous is None else previous
    result: dict[str, Any] = {**previous, "name": NAME, "quick": quick, "dry_run": dry_run, "environment": environment(),
                              "gpu": torch.cuda.get_device_name(0) if not dry_run else "none (CPU stand-ins)",
                              "torch": torch.__version__, "plan": {"budget_seconds": budget, "sections": {}}}
    with tempfile.TemporaryDirectory(prefix="bench-gpu-") as tmp:
        ctx = Context(dry_run, sizes, budget, Path(tmp), packing)
        result.update(data=ctx.data_what, packing_method=ctx.packing, device=ctx.device)
        result["plan"]["setup_seconds"] = clock() - ctx.t0
        try:
            for i, key in enumerate(keys):
                _one(ctx, result, key, plan, [k for k in keys[i + 1:] if k in REQUIRED])
                if on_section is not None:
                    on_section({**result, "partial": key != keys[-1]})
        finally:
            ctx.close()
    result["wall_seconds"], result["partial"] = clock() - ctx.t0, False
    result["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    return result


def _one(ctx: Context, result: dict[str, Any], key: str, plan: dict[str, float], later: list[str]) -> None:
    """Run section ``key`` within what the plan allows it (module docstring), or record why not."""
    what, measure = SECTIONS[key]
    allowance = ctx.left() - sum(plan.get(k, 0) for k in later)
    need = plan.get(key, 0)
    t0 = clock()
    if allowance < (0.5 * need if key in REQUIRED else need) or allowance <= 0:
        result[key] = {"skipped": f"time plan: {max(allowance, 0):.0f} s left for it, {need:.0f} s planned"}
        print(f"[{NAME}] {what}: skipped ({result[key]['skipped']})", flush=True)
    else:
        print(f"[{NAME}] {what} on {result['gpu']} ({allowance:.0f} s allowed, {need:.0f} s planned)", flush=True)
        end = t0 + allowance
        try:
            args = (result.get("packing"),) if key == "search" else ()
            result[key] = measure(ctx, lambda: end - clock(), *args)
        except Exception as exc:  # noqa: BLE001 - one broken section must not lose the others
            traceback.print_exc()
            result[key] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
    result[key]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    result["plan"]["sections"][key] = {"planned": need, "seconds": clock() - t0,
                                       "skipped": result[key].get("skipped")}
    print(f"[{NAME}] {key}: {clock() - t0:.0f} s (planned {need:.0f} s); "
          f"{ctx.left():.0f} s of the budget left", flush=True)


def render(result: dict[str, Any]) -> str:
    from bench.gpu_render import render as render_all

    return render_all(result)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=TITLE)
    p.add_argument("--quick", action="store_true", help="fewer seeds and rounds")
    p.add_argument("--seeds", type=int, help="seeds per side of the reproduction (and of the earlier sections)")
    p.add_argument("--only", help=f"comma-separated sections ({', '.join(SECTIONS)}), merged into the saved results")
    p.add_argument("--dry-run", action="store_true", help="every section on the CPU at tiny sizes -> a temp file")
    p.add_argument("--results", type=Path, help=f"results file (default reports/bench/gpu.json; dry run: {DRY_RESULTS})")
    p.add_argument("--budget-seconds", type=float, help="the whole script's time (default 540 on the GPU)")
    p.add_argument("--packing", choices=("auto", "ray", "processes"), default="auto",
                   help="how trials are packed per GPU (auto: Ray where it is importable and CUDA is there)")
    p.add_argument("--render", action="store_true", help="only print the rendered results file")
    args = p.parse_args(argv)
    path = args.results or (DRY_RESULTS if args.dry_run else RESULTS)
    if args.render:
        print(render(json.loads(path.read_text())))
        return
    only = None if args.only is None else [x.strip() for x in args.only.split(",") if x.strip()]
    unknown = sorted(set(only or ()) - set(SECTIONS))
    if unknown:
        p.error(f"--only: unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    previous = _previous(path, args.dry_run, only)
    t0 = clock()
    res = run(quick=args.quick, seeds=args.seeds, only=only, dry_run=args.dry_run, budget=args.budget_seconds,
              packing=args.packing, previous=previous, on_section=lambda part: write_json(path, part))
    print(f"wrote {write_json(path, res)} in {clock() - t0:.0f} s")
    print(render(res))


def _previous(path: Path, dry_run: bool, only: list[str] | None) -> dict[str, Any]:
    """What the new results are merged into: the results file, else (a GPU run writing elsewhere, as into the
    device's $OUT) the committed reports/bench/gpu.json, so sections not run keep their last results. A dry run
    without --only starts afresh."""
    for candidate in ([path] if dry_run else [path, RESULTS]):
        if candidate.exists() and (only or not dry_run):
            return json.loads(candidate.read_text())
    return {}


if __name__ == "__main__":
    main()
