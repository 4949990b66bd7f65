"""The GPU path, on a lent GPU machine: the tests that need CUDA, then recipe timings on the GPU.

Run only where ``torch.cuda.is_available()`` (``python -m bench.gpu``, or ``--only gpu``); elsewhere it stops
with one line and ``make bench`` keeps the previous results. The CPU machines this project is built on have
no GPU, so this section is only as recent as the last session that was lent one.

Method, in the order it runs (``main`` saves the results after each section, so a run cut short on the lent
machine keeps what it measured):
1) Our CIFAR-10 recipe beside airbench (issue 17, item 4). Time to 94 % on CIFAR-10, the records' measure,
   cannot be taken: no CIFAR-10 reaches the lent machine (no network there, none on the machines that send it
   work). What is measured instead, on the same GPU and the same real images: Fashion-MNIST shaped as
   CIFAR-10 (28x28 grey padded to 32x32, repeated over 3 channels; 60000 train, 10000 test), written in both
   CIFAR-10's python layout (our ``cifar10`` loader) and the ``cifar10/{train,test}.pt`` cache airbench's
   ``CifarLoader`` reads. ``recipes/cifar10_airbench.yaml`` (ResNet-9, batch 1024, bf16, Muon, patch
   whitening, Lookahead, flip TTA; all training images, no hold-out) and airbench's own ``train94`` (PyPI
   ``airbench``, the bench extra; its published configuration, in a child process), each at ``SIDE_EPOCHS``
   epochs (airbench's published 9.9 in place of 10), sides alternating per seed, fresh seeds, one warm-up fit
   on each side first. Train seconds between CUDA syncs (evaluation and building the loaders outside;
   airbench's whitening set-up inside, as its own timer counts it); test accuracy. Time to airbench's
   final (9.9-epoch) accuracy on each side's curve (``bench.recipe_speedup.curve_speedup``): per seed and
   on the medians.
2) CUDA tests: ``pytest`` on the test files whose CUDA cases skip on a CPU machine (data loader with CUDA
   tensors and generators, streamed batches moved with ``non_blocking``, no host-device sync between
   FIT_START and FIT_END). Passed / skipped / failed counts and the CUDA cases' names are recorded.
3) Fashion-MNIST on the GPU: §5's plain baseline at budgets 2 and 5 (4 and 10 epochs) and the recipe §8's
   ablation takes (``bench.ablation._source``: the newest search's confirmed headline) at the same budgets,
   all in bf16 autocast on ``cuda`` (a strong GPU baseline uses mixed precision), arms interleaved in
   rotated order per seed, fresh seeds. Test accuracy; train_seconds exclude evaluation. Speedup at the
   10-epoch baseline's accuracy: ``bench.recipe_speedup.curve_speedup`` per seed.
4) What each of the recipe's methods costs on the GPU: the recipe at budget 1 (2 epochs), whole and without
   each method (``bench.ablation.arms_of``, as §8 on the CPU), plus the baseline, one seed, after a warm-up
   fit, arms in rotated order twice; images/s (accuracy at 2 epochs is not the point here).
"""
from __future__ import annotations

import argparse
import json
import math
import pickle
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import ROOT, environment, fit_or_nan, fmt, md_table, summarize

NAME = "gpu"
SOURCE = f"bench:{NAME}"
TITLE = "GPU path: our CIFAR-10 recipe beside airbench, the CUDA-only tests, and recipe timings on a lent GPU"
NEEDS_CUDA = True  # bench.run_all skips it elsewhere, keeping the previous results
CUDA_TESTS = ("tests/data/test_loader.py", "tests/data/test_stream.py", "tests/train/test_timing.py")
BUDGETS = (2.0, 5.0)  # §5's baseline epochs per budget: 4 and 10
SEEDS = 3
SEED_OFFSET = 5000  # fresh seeds, apart from the search's and §5's (1000 + k)
SIDE_EPOCHS = (2.0, 4.0, 6.0, 10.0)  # our CIFAR-10 recipe's epochs beside airbench; its published 9.9 for 10
AIRBENCH = {"seconds": 3.29, "epochs": 9.9, "gpu": "A100", "accuracy": 0.94}  # airbench94.py's README figure


def _cuda_tests() -> dict[str, Any]:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", *CUDA_TESTS]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|error)", out.splitlines()[-1] if out else "")}
    cuda_cases = sorted({m for m in re.findall(r"^(?:PASSED|FAILED|SKIPPED|ERROR) (\S+)", out, re.M)
                         if "cuda" in m.lower() or "gpu" in m.lower()})
    return {"returncode": proc.returncode, "counts": counts, "cuda_cases": cuda_cases,
            "tail": "\n".join(out.splitlines()[-15:])}


def _fashion_arms() -> tuple[str, dict[str, dict[str, Any]]]:
    from bench.ablation import _source

    name, recipe, base = _source()
    arms: dict[str, dict[str, Any]] = {}
    for kind, data in (("baseline", base), ("recipe", recipe)):
        for b in BUDGETS:
            arms[f"{kind} @ budget {b:g}"] = {**data, "budget": b, "device": "cuda", "precision": "bf16",
                                              "threads": None}
    return name, arms


def _fashion(n_seeds: int) -> dict[str, Any]:
    name, arms = _fashion_arms()
    labels = list(arms)
    runs = []
    for s in range(n_seeds):
        for label in labels[s % len(labels):] + labels[:s % len(labels)]:
            fresh = int(arms[label].get("seed", 0)) + SEED_OFFSET + s
            rec = {"seed": s, "arm": label, **fit_or_nan({**arms[label], "seed": fresh}, SOURCE)}
            runs.append(rec)
            print(f"  seed {s} {label}: acc {rec['accuracy']:.4f} in {rec['train_seconds']:.1f} s", flush=True)
    return {"recipe": name, "arms": arms, "runs": runs, "speedups": _speedups(runs, n_seeds)}


def _speedups(runs: list[dict[str, Any]], n_seeds: int) -> list[dict[str, Any]]:
    from bench.recipe_speedup import curve_speedup

    out = []
    for s in range(n_seeds):
        mine = [r for r in runs if r["seed"] == s]

        def curve(kind: str, mine: list[dict[str, Any]] = mine) -> tuple[list[float], list[float]]:
            rows = sorted((r for r in mine if r["arm"].startswith(kind)), key=lambda r: r["train_seconds"])
            return [r["train_seconds"] for r in rows], [r["accuracy"] for r in rows]

        out.append({"seed": s, **curve_speedup(*curve("recipe"), *curve("baseline"))})
    return out


def _method_costs(repeats: int) -> dict[str, Any]:
    from bench.ablation import arms_of

    _, arms = _fashion_arms()
    recipe, base = arms[f"recipe @ budget {BUDGETS[0]:g}"], arms[f"baseline @ budget {BUDGETS[0]:g}"]
    arms = {"baseline": {**base, "budget": 1.0}, **arms_of({**recipe, "budget": 1.0}, base)}
    labels, runs = list(arms), []
    _warm_up(arms["whole recipe"])
    for r in range(repeats):
        for label in labels[r % len(labels):] + labels[:r % len(labels)]:
            runs.append({"seed": r, "arm": label, **fit_or_nan({**arms[label], "seed": SEED_OFFSET + 100 + r}, SOURCE)})
            print(f"  {label}: {runs[-1]['throughput']:.0f} images/s", flush=True)
    return {"arms": labels, "runs": runs, "repeats": repeats}


def _warm_up(data: dict[str, Any]) -> None:
    """One 1-epoch fit first: the first fit in a process pays CUDA's one-off start-up (kernel loading, cuDNN's
    autotuning), which is not a cost of training. (Shorter would not do: a run must outlast its LR warm-up.)"""
    rec = fit_or_nan({**data, "budget": 1.0, "max_duration": 1, "seed": SEED_OFFSET + 99}, SOURCE)
    if "error" in rec:
        print(f"  warm-up fit failed, so the first timed fit pays the start-up: {rec['error']}", flush=True)


def fashion_as_cifar() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Fashion-MNIST shaped as CIFAR-10: each 28x28 grey image padded with 2 black pixels a side to 32x32 and
    repeated over 3 channels; uint8 images (N, 32, 32, 3) and int64 labels, train then test. Real images that
    both airbench and our loader read, where CIFAR-10 itself cannot be had."""
    import torch

    from recipesearch.data import DataSpec, get_dataset

    raw = get_dataset("fashion_mnist")(DataSpec(name="fashion_mnist"))

    def rgb(x: torch.Tensor) -> np.ndarray:
        return torch.nn.functional.pad(x, (2, 2, 2, 2)).expand(-1, 3, -1, -1).permute(0, 2, 3, 1).contiguous().numpy()

    return rgb(raw.train_images), raw.train_labels.numpy(), rgb(raw.test_images), raw.test_labels.numpy()


def write_cifar_format(directory: Path, images: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> None:
    """``(train images, train labels, test images, test labels)``, images uint8 (N, 32, 32, 3), in CIFAR-10's
    python layout (five training batches, one test batch; rows of 3072 bytes, red plane then green then blue)."""
    train_x, train_y, test_x, test_y = images
    directory.mkdir(parents=True, exist_ok=True)
    parts = np.array_split(np.arange(len(train_x)), 5)
    batches = [*((f"data_batch_{i + 1}", train_x[idx], train_y[idx]) for i, idx in enumerate(parts)),
               ("test_batch", test_x, test_y)]
    for name, x, y in batches:
        batch = {b"data": np.ascontiguousarray(x.transpose(0, 3, 1, 2)).reshape(len(x), 3072),
                 b"labels": [int(v) for v in y]}
        with open(directory / name, "wb") as f:
            pickle.dump(batch, f)


CIFAR_CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def write_airbench_format(directory: Path, images: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> None:
    """The same images as airbench's CifarLoader caches CIFAR-10: ``cifar10/{train,test}.pt`` holding uint8
    images (N, 32, 32, 3), int64 labels and the class names."""
    import torch

    train_x, train_y, test_x, test_y = images
    (directory / "cifar10").mkdir(parents=True, exist_ok=True)
    for name, x, y in (("train", train_x, train_y), ("test", test_x, test_y)):
        torch.save({"images": torch.from_numpy(np.ascontiguousarray(x)), "labels": torch.from_numpy(y.astype(np.int64)),
                    "classes": CIFAR_CLASSES}, directory / "cifar10" / f"{name}.pt")


# airbench's published configuration (train94's defaults), run by its own code in a child process whose working
# directory holds the data (CifarLoader('cifar10')). Timed as the records time it (wall clock between CUDA syncs,
# whitening set-up included); building the data loader and the evaluation (its tta_level 2) are outside.
AIRBENCH_SCRIPT = """
import json, sys, time, torch, airbench
from airbench import lib_airbench94 as lib
from airbench.utils import CifarLoader, evaluate

def one(epochs, seed):
    torch.manual_seed(seed)
    loader = CifarLoader("cifar10", train=True, batch_size=lib.hyp["opt"]["batch_size"], aug=lib.hyp["aug"],
                         altflip=True)
    torch.cuda.synchronize(); start = time.perf_counter()
    model = airbench.train94(loader, epochs=epochs, verbose=False)
    torch.cuda.synchronize(); seconds = time.perf_counter() - start
    start = time.perf_counter()
    accuracy = evaluate(model, CifarLoader("cifar10", train=False, batch_size=2000), lib.hyp["net"]["tta_level"])
    return {"epochs": epochs, "train_seconds": seconds, "accuracy": accuracy, "eval_seconds": time.perf_counter() - start}

args = json.loads(sys.argv[1])
one(1, 12345)  # warm-up: cuDNN autotuning and the first allocations, not a cost of training
for epochs in args["epochs"]:
    print(json.dumps(one(epochs, args["seed"])), flush=True)
"""


def _airbench_runs(workdir: Path, epochs: list[float], seed: int) -> list[dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-c", AIRBENCH_SCRIPT, json.dumps({"epochs": epochs, "seed": seed})],
                          cwd=workdir, capture_output=True, text=True, timeout=900)
    runs = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0:
        err = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1][:300]
        runs += [{"epochs": e, "accuracy": math.nan, "train_seconds": math.nan, "error": err}
                 for e in epochs[len(runs):]]
    return runs


def _side_by_side(n_seeds: int) -> dict[str, Any]:
    """Our CIFAR-10 recipe and airbench's published configuration on the same GPU and the same real images
    (Fashion-MNIST in CIFAR-10's shape), each at several epoch counts, sides alternating per seed; each side's
    time to the targets of ``_side_speedups`` read off its curves."""
    import importlib.util
    from importlib.metadata import version

    from recipesearch.recipe import load_recipe

    if importlib.util.find_spec("airbench") is None:
        return {"skipped": "airbench is not installed (the bench extra: pip install -e '.[bench]')"}
    ours_epochs = list(SIDE_EPOCHS)
    theirs_epochs = [AIRBENCH["epochs"] if e == max(SIDE_EPOCHS) else e for e in SIDE_EPOCHS]
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        images = fashion_as_cifar()
        write_cifar_format(Path(tmp) / "cifar-10-batches-py", images)
        write_airbench_format(Path(tmp), images)
        ours = load_recipe(ROOT / "recipes" / "cifar10_airbench.yaml").to_dict()
        # all 60000 training images, as airbench trains on: nothing is selected here, so nothing is held out
        ours["data"] = {**ours["data"], "root": tmp, "val_fraction": 0.0}
        _warm_up(ours)
        for s in range(n_seeds):
            seed, k = SEED_OFFSET + s, s % len(SIDE_EPOCHS)
            sides = ["airbench", "ours"] if s % 2 == 0 else ["ours", "airbench"]
            for side in sides:
                if side == "airbench":
                    got = _airbench_runs(Path(tmp), theirs_epochs[k:] + theirs_epochs[:k], seed)
                else:
                    got = [{"epochs": e, **fit_or_nan({**ours, "max_duration": e, "seed": seed}, SOURCE)}
                           for e in ours_epochs[k:] + ours_epochs[:k]]
                for r in got:
                    runs.append({"seed": s, "side": side, **r})
                    print(f"  seed {s} {side} {r['epochs']:g} epochs: acc {r['accuracy']:.4f} in "
                          f"{r['train_seconds']:.2f} s", flush=True)
    return {"data": f"Fashion-MNIST as 32x32 RGB in CIFAR-10's layout, {len(images[0])} train / "
                    f"{len(images[2])} test images", "airbench_version": version("airbench"), "seeds": n_seeds,
            "runs": runs, **_side_speedups(runs, n_seeds)}


def _side_speedups(runs: list[dict[str, Any]], n_seeds: int) -> dict[str, Any]:
    """Time each side needs to reach a target accuracy, read off its own curve (log-time interpolation between
    its runs, no extrapolation): per seed off that seed's runs, and off the curves of medians per epoch count.
    Targets: 94 % (the records' measure), our final accuracy and airbench's (each its longest runs' median)."""
    medians = [{"side": side, "epochs": e, **{k: summarize(r[k] for r in runs if r["side"] == side
                                                            and r["epochs"] == e)["median"]
                                              for k in ("train_seconds", "accuracy")}}
               for side in SIDES for e in sorted({r["epochs"] for r in runs if r["side"] == side})]
    final = {side: [m for m in medians if m["side"] == side][-1]["accuracy"] for side in SIDES}
    targets = {"the records' measure": AIRBENCH["accuracy"], "our final accuracy": final["ours"],
               "airbench's final accuracy": final["airbench"]}
    return {"medians": medians, "targets": [
        {"name": name, "accuracy": acc, "on_medians": _times_to(acc, medians),
         "per_seed": [_times_to(acc, [r for r in runs if r["seed"] == s]) for s in range(n_seeds)]}
        for name, acc in targets.items()]}


SIDES = ("airbench", "ours")


def _times_to(accuracy: float, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each side's time to ``accuracy`` (NaN where its curve does not get there) and ours / airbench's."""
    from recipesearch.analysis.speedup import BELOW_BASELINE, INTERPOLATED, time_to_reach

    out: dict[str, Any] = {}
    for side in SIDES:
        mine = [r for r in rows if r["side"] == side and math.isfinite(r["train_seconds"])]
        t, status = time_to_reach(accuracy, ([r["train_seconds"] for r in mine], [r["accuracy"] for r in mine]))
        # reached already at its cheapest run: that run's time, an upper bound
        out[side] = {"seconds": t if status in (INTERPOLATED, BELOW_BASELINE) else math.nan,
                     "upper_bound": status == BELOW_BASELINE}
    out["ratio"] = out["ours"]["seconds"] / out["airbench"]["seconds"]
    return out


# key -> (what the log says, the measurement given (quick, seeds)), in the order they run; the lambdas look the
# functions up when called
SECTIONS: dict[str, tuple[str, Callable[[bool, int], dict[str, Any]]]] = {
    "side_by_side": ("our CIFAR-10 recipe beside airbench's", lambda quick, n: _side_by_side(n)),
    "cuda_tests": ("CUDA tests", lambda quick, n: _cuda_tests()),
    "fashion_mnist": ("Fashion-MNIST", lambda quick, n: {**_fashion(n), "seeds": n}),
    "method_costs": ("what each method costs on the GPU", lambda quick, n: _method_costs(1 if quick else 2)),
}


def run(quick: bool = False, seeds: int | None = None, only: list[str] | None = None,
        on_section: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The sections in ``SECTIONS`` order (those in ``only``, else all); ``on_section`` gets the result so far
    after each (``main`` saves it, so a run cut short on the lent machine keeps what it measured)."""
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("bench.gpu needs a CUDA device (run it on a GPU machine); previous results kept")
    t0 = time.perf_counter()
    result: dict[str, Any] = {"name": NAME, "quick": quick, "gpu": torch.cuda.get_device_name(0),
                              "torch": torch.__version__, "environment": environment()}
    n_seeds = seeds or (1 if quick else SEEDS)
    keys = [key for key in SECTIONS if only is None or key in only]
    for key in keys:
        what, measure = SECTIONS[key]
        print(f"[{NAME}] {what} on {result['gpu']} ({n_seeds} seed(s) where seeds apply)", flush=True)
        result[key] = measure(quick, n_seeds)
        result["wall_seconds"] = time.perf_counter() - t0
        if on_section is not None:
            on_section({**result, "partial": key != keys[-1]})
    result["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    return result


def _median(runs: list[dict[str, Any]], arm: str, key: str) -> float:
    return summarize(r.get(key, math.nan) for r in runs if r["arm"] == arm)["median"]


def render(result: dict[str, Any]) -> str:
    lines = [f"**What**: on {result['gpu']} (torch {result['torch']}): our CIFAR-10 recipe beside airbench's published "
             f"configuration on the same real images; the tests whose CUDA cases skip on the CPU machines; §5's "
             f"Fashion-MNIST baseline and recipe on the GPU; what each of the recipe's methods costs there "
             f"(`bench/gpu.py`'s docstring says how)."]
    if result.get("partial"):
        lines.append("**This run was cut short**: only the sections below were measured.")
    for key, text in (("side_by_side", _side_text), ("cuda_tests", _tests_text), ("fashion_mnist", _fashion_text),
                      ("method_costs", _costs_text)):
        if key in result:
            lines += ["", text(result[key])]
    return "\n".join(lines)


def _side_text(sb: dict[str, Any]) -> str:
    ab = AIRBENCH
    head = (f"**Our CIFAR-10 recipe beside airbench** (issue 17, item 4). Time to {ab['accuracy']:.0%} on CIFAR-10, the "
            f"records' measure, cannot be taken here: no CIFAR-10 reaches the lent machine (no network there, and "
            f"none on the machines that send it work). airbench reports {ab['seconds']} s on an {ab['gpu']} for its "
            f"{ab['epochs']} epochs.")
    if "skipped" in sb:
        return f"{head} Not run: {sb['skipped']}."
    rows = [[m["side"], f"{m['epochs']:g}", fmt(m["train_seconds"], ".2f"), fmt(m["accuracy"], ".4f"),
             fmt(m["train_seconds"] / m["epochs"], ".3f")] for m in sb["medians"]]

    def secs(t: dict[str, Any]) -> str:
        return "not reached" if not math.isfinite(t["seconds"]) else ("≤ " if t["upper_bound"] else "") + f"{t['seconds']:.2f}"

    def times(ratio: float) -> str:
        return f"{ratio:.2f}x" if math.isfinite(ratio) else "–"

    targets = [[f"{t['name']}: {t['accuracy']:.2%}", secs(t["on_medians"]["airbench"]), secs(t["on_medians"]["ours"]),
                times(t["on_medians"]["ratio"]), ", ".join(times(p["ratio"]) for p in t["per_seed"])]
               for t in sb["targets"]]
    errors = sorted({r["error"] for r in sb["runs"] if r.get("error")})
    return "\n".join([
        head + f" Instead, both on the same GPU and the same real images ({sb['data']}): our "
        f"`recipes/cifar10_airbench.yaml` (all training images, no hold-out) and airbench's own `train94` (PyPI "
        f"airbench {sb['airbench_version']}, its published configuration; {ab['epochs']} epochs in place of our "
        f"10), each at several epoch counts, {sb['seeds']} fresh seed(s), sides alternating per seed. Test accuracy "
        f"(airbench's with its own mirror+translate TTA, ours with flip TTA); train seconds between CUDA syncs, "
        f"evaluation and building the data loader outside, airbench's whitening set-up inside. Medians:",
        "", md_table(["side", "epochs", "train s", "test accuracy", "s per epoch"], rows), "",
        "**Time to an accuracy** on each side's curve (interpolated between its runs, never extrapolated; on the "
        "curves of medians, and the ratio per seed off that seed's runs):",
        "", md_table(["target", "airbench s", "ours s", "ours / airbench", "per seed"], targets), "",
        _side_gap(sb["medians"]),
    ] + ([f"Failed runs: {'; '.join(errors)}."] if errors else []))


def _side_gap(medians: list[dict[str, Any]]) -> str:
    """Where the gap lies: time per epoch, or progress per epoch (accuracy at the same epoch count)."""
    if {m["side"] for m in medians} != set(SIDES):
        return "One side has no runs: no per-epoch comparison."
    first, last = ({side: [m for m in medians if m["side"] == side][i] for side in SIDES} for i in (0, -1))
    per_epoch = (last["ours"]["train_seconds"] / last["ours"]["epochs"]) / (
        last["airbench"]["train_seconds"] / last["airbench"]["epochs"])
    gaps = [100 * (m["ours"]["accuracy"] - m["airbench"]["accuracy"]) for m in (first, last)]
    step_cost = per_epoch > 1.25 and max(abs(g) for g in gaps) < 0.5
    return (f"Per epoch ours takes {per_epoch:.2f}x airbench's time (longest runs); at the same epoch count it is "
            f"{gaps[0]:+.2f} pp at {first['ours']['epochs']:g} epochs and {gaps[1]:+.2f} pp at the longest"
            + (": the gap is mostly the cost of a step, not what a step learns." if step_cost else "."))


def _tests_text(t: dict[str, Any]) -> str:
    counts = ", ".join(f"{n} {k}" for k, n in t["counts"].items()) or "no summary line"
    cases = ", ".join("`" + c.split("::")[-1] + "`" for c in t["cuda_cases"]) or "none found"
    return (f"**CUDA tests** ({', '.join(f'`{p}`' for p in CUDA_TESTS)}): {counts}; exit code {t['returncode']}. "
            f"CUDA cases: {cases}.")


def _fashion_text(fm: dict[str, Any]) -> str:
    rows = [[arm, fmt(_median(fm["runs"], arm, "train_seconds"), ".1f"), fmt(_median(fm["runs"], arm, "accuracy"), ".4f"),
             fmt(_median(fm["runs"], arm, "throughput"), ".0f"), fmt(_median(fm["runs"], arm, "data_wait_fraction"), ".2f")]
            for arm in fm["arms"]]
    sp = "; ".join(f"seed {s['seed']}: {fmt(s['speedup'], '.2f')}x ({s['status']})" for s in fm["speedups"])
    speedups = [s["speedup"] for s in fm["speedups"] if math.isfinite(s["speedup"])]
    longest = f"budget {max(BUDGETS):g}"
    rate = _median(fm["runs"], f"recipe @ {longest}", "throughput") / _median(fm["runs"], f"baseline @ {longest}",
                                                                             "throughput")
    verdict = ("faster" if np.median(speedups) > 1 else "slower") if speedups else "not comparable"
    return "\n".join([
        f"**Fashion-MNIST on the GPU** (bf16, {fm['seeds']} fresh seed(s), medians; recipe: {fm['recipe']}):", "",
        md_table(["arm", "train s", "test accuracy", "images/s", "data wait"], rows), "",
        f"Speedup at the 10-epoch baseline's accuracy, per seed: {sp}. Median "
        f"{fmt(float(np.median(speedups)) if speedups else math.nan, '.2f')}x: on this GPU the recipe found on "
        f"2 CPU cores is {verdict} than the baseline; it trains at {fmt(rate, '.2f')}x the baseline's images/s "
        f"(on the CPU its methods' costs are weighed against a slower baseline step, §2 and §8). A recipe is "
        f"found for the hardware it is searched on.",
    ])


def _costs_text(mc: dict[str, Any]) -> str:
    best = {arm: max((r["throughput"] for r in mc["runs"] if r["arm"] == arm and math.isfinite(r["throughput"])),
                     default=math.nan) for arm in mc["arms"]}
    ratio = {a: v / best["whole recipe"] for a, v in best.items()}
    costly = ", ".join(f"{a[8:]} (x{ratio[a]:.2f})" for a in sorted(ratio, key=lambda a: -ratio[a])
                       if a.startswith("without ") and ratio[a] > 1.05) or "none"
    rows = [[arm, fmt(best[arm], ".0f"), fmt(ratio[arm], ".2f")] for arm in best]
    return "\n".join([
        f"**What each method costs on the GPU** (the recipe at budget 1, whole and without each method, after a "
        f"warm-up fit, best of {mc['repeats']} run(s) each; images/s relative to the whole recipe: above 1, the "
        f"method slows it). Costing over 5 %: {costly}.", "",
        md_table(["arm", "images/s", "x whole recipe"], rows),
    ])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=TITLE)
    p.add_argument("--quick", action="store_true", help="1 seed, 1 run per method")
    p.add_argument("--seeds", type=int)
    p.add_argument("--only", help=f"comma-separated sections ({', '.join(SECTIONS)}), merged into the saved results")
    args = p.parse_args(argv)
    from bench.common import load_result, save_result

    only = None if args.only is None else [x.strip() for x in args.only.split(",") if x.strip()]
    unknown = sorted(set(only or ()) - set(SECTIONS))
    if unknown:
        p.error(f"--only: unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    previous = (load_result(NAME) or {}) if only else {}
    res = {**previous, **run(quick=args.quick, seeds=args.seeds, only=only,
                             on_section=lambda part: save_result(NAME, {**previous, **part}))}
    print(f"wrote {save_result(NAME, res)}")
    print(render(res))


if __name__ == "__main__":
    main()
