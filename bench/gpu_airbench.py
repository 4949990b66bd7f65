"""Our recipe beside airbench's own ``train94`` on the same device and the same images (bench/gpu.py's reproduction
and search sections).

airbench (PyPI ``airbench`` 0.1.8, the bench extra) runs its published configuration in a child process whose
working directory holds the images (``CifarLoader("cifar10")`` reads ``cifar10/{train,test}.pt``). The child
stays up for the whole script: it warms up once (cuDNN autotuning, first allocations), says it is ready, then
answers one JSON request per line (``{"epochs": e, "seed": s}``) with one JSON line, so sides can alternate
seed by seed without paying a process start each time. Timed as the records time it: wall clock between CUDA
syncs around ``train94`` (its whitening set-up and building its few-ms net inside; building the loaders, which
the child does once, and the evaluation outside: the test loader ``train94`` would load inside is handed the
child's own).

Without CUDA (the dry run on CPU stand-ins) airbench cannot run at all (it calls ``.cuda()``); a stand-in child
speaks the same protocol and trains a small plain-PyTorch net on the same ``cifar10/*.pt`` files, so the
protocol, the alternation and the analysis are exercised end to end. Its rows say "stand-in".
"""
from __future__ import annotations

import json
import math
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import summarize

SIDES = ("airbench", "ours")
TARGET = 0.94  # the records' measure: time to 94 % test accuracy

AIRBENCH_SERVER = """
import json, sys, time, torch, airbench
from airbench import lib_airbench94 as lib
from airbench.utils import CifarLoader, evaluate
try:
    from importlib.metadata import version
    VERSION = version("airbench")
except Exception:
    VERSION = "unknown"

train = CifarLoader("cifar10", train=True, batch_size=lib.hyp["opt"]["batch_size"], aug=lib.hyp["aug"], altflip=True)
test = CifarLoader("cifar10", train=False, batch_size=2000)
# train94 builds a test loader it only uses when verbose (inside the timed region: a 30 MB load): hand it ours
lib.CifarLoader = lambda path, train=True, **kw: test if not train else CifarLoader(path, train=train, **kw)

def one(epochs, seed):
    torch.manual_seed(seed)
    torch.cuda.synchronize(); start = time.perf_counter()
    model = airbench.train94(train, epochs=epochs, verbose=False)
    torch.cuda.synchronize(); seconds = time.perf_counter() - start
    start = time.perf_counter()
    accuracy = evaluate(model, test, lib.hyp["net"]["tta_level"])
    return {"train_seconds": seconds, "accuracy": accuracy, "eval_seconds": time.perf_counter() - start}

one(1, 12345)  # warm-up: cuDNN autotuning and the first allocations, not a cost of training
print(json.dumps({"ready": True, "version": VERSION, "what": "airbench train94"}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    try:
        out = one(req["epochs"], req["seed"])
    except Exception as exc:
        out = {"accuracy": float("nan"), "train_seconds": float("nan"), "error": f"{type(exc).__name__}: {exc}"[:300]}
    print(json.dumps({"epochs": req["epochs"], **out}), flush=True)
"""

# The CPU stand-in: the same protocol and files, a small net trained by a plain loop (no airbench, no CUDA).
STANDIN_SERVER = """
import json, math, sys, time, torch
import torch.nn.functional as F
torch.set_num_threads(1)
train, test = torch.load("cifar10/train.pt"), torch.load("cifar10/test.pt")
def prep(d):
    return (d["images"].permute(0, 3, 1, 2).float() / 255 - 0.5) / 0.25, d["labels"]
(x, y), (tx, ty) = prep(train), prep(test)

def one(epochs, seed):
    torch.manual_seed(seed)
    start = time.perf_counter()
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                              torch.nn.Flatten(), torch.nn.Linear(8, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    bs = 128
    steps = max(1, math.ceil(len(y) / bs * epochs))
    for step in range(steps):
        if step % max(1, len(y) // bs) == 0:
            order = torch.randperm(len(y))
        i = step % max(1, len(y) // bs)
        idx = order[i * bs:(i + 1) * bs]
        loss = F.cross_entropy(net(x[idx]), y[idx])
        opt.zero_grad(); loss.backward(); opt.step()
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    with torch.no_grad():
        accuracy = (net(tx).argmax(1) == ty).float().mean().item()
    return {"train_seconds": seconds, "accuracy": accuracy, "eval_seconds": time.perf_counter() - start}

one(0.1, 12345)
print(json.dumps({"ready": True, "version": "", "what": "CPU stand-in for airbench train94"}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    print(json.dumps({"epochs": req["epochs"], **one(req["epochs"], req["seed"])}), flush=True)
"""


class AirbenchUnavailable(RuntimeError):
    """airbench (or its stand-in) could not start: the message says why."""


class AirbenchChild:
    """One long-lived child process answering ``run(epochs, seed)``; ``stand_in`` runs ``STANDIN_SERVER``."""

    def __init__(self, workdir: Path, stand_in: bool = False, start_timeout: float = 300.0):
        self.stand_in = stand_in
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self._proc = subprocess.Popen([sys.executable, "-c", STANDIN_SERVER if stand_in else AIRBENCH_SERVER],
                                      cwd=workdir, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._stderr, text=True, bufsize=1)
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.info: dict[str, Any] = {}
        self.start_timeout = start_timeout
        self.started = time.perf_counter()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            if line.startswith("{"):
                self._lines.put(line)
        self._lines.put(None)  # EOF: the child is gone

    def _next(self, timeout: float) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.close()
            raise AirbenchUnavailable(f"no answer within {timeout:.0f} s") from None
        if line is None:
            raise AirbenchUnavailable(self.error_tail())
        return json.loads(line)

    def error_tail(self) -> str:
        self._stderr.seek(0)
        lines = [x for x in self._stderr.read().strip().splitlines() if x.strip()]
        return (lines[-1] if lines else f"exit {self._proc.poll()}")[:300]

    def wait_ready(self) -> dict[str, Any]:
        """Block until the child has warmed up; its ready line (version, what), with the seconds it took."""
        if not self.info:
            self.info = {**self._next(self.start_timeout), "start_seconds": time.perf_counter() - self.started}
        return self.info

    def run(self, epochs: float, seed: int, timeout: float = 300.0) -> dict[str, Any]:
        """One training run; a dead or silent child is a row with NaNs and the reason, not an exception."""
        try:
            self.wait_ready()
            assert self._proc.stdin is not None
            self._proc.stdin.write(json.dumps({"epochs": epochs, "seed": seed}) + "\n")
            self._proc.stdin.flush()
            return self._next(timeout)
        except (AirbenchUnavailable, BrokenPipeError, OSError) as exc:
            return {"epochs": epochs, "accuracy": math.nan, "train_seconds": math.nan, "error": str(exc)[:300]}

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.close()
                self._proc.wait(timeout=10)
            except Exception:  # noqa: BLE001 - it is going away either way
                self._proc.kill()
                self._proc.wait()


def unavailable_reason(stand_in: bool) -> str | None:
    """Why airbench's own side cannot run here (None: it can): airbench not installed, or no CUDA."""
    import importlib.util

    import torch

    if stand_in:
        return None
    if importlib.util.find_spec("airbench") is None:
        return "airbench is not importable (the bench extra: pip install -e '.[bench]', or carry its wheel)"
    if not torch.cuda.is_available():
        return "airbench's train94 needs CUDA"
    return None


def at_epochs(recipe: dict[str, Any], epochs: float, seed: int) -> dict[str, Any]:
    """``recipe`` trained for ``epochs``: its budget set to epochs / max_duration, as a search dilates a recipe
    (every schedule milestone with it), and a fresh seed."""
    return {**recipe, "budget": epochs / float(recipe["max_duration"]), "seed": seed}


def alternate(ours: Callable[[float, int], dict[str, Any]], child: AirbenchChild | None, epochs: list[float],
              seeds: list[int], left: Callable[[], float], log: Callable[[str], None] = print) -> dict[str, Any]:
    """Both sides at every epoch count for each seed, sides alternating per seed (airbench first on even seeds),
    the epoch counts rotated per seed. Stops before a seed that the time ``left()`` would not cover (the
    slowest seed so far as the estimate) and says so. ``child`` None: our side alone."""
    runs: list[dict[str, Any]] = []
    per_seed: list[float] = []
    skipped = None
    for i, seed in enumerate(seeds):
        if per_seed and max(per_seed) > left():
            skipped = (f"{len(seeds) - i} of {len(seeds)} seed(s) not run: a seed takes about {max(per_seed):.0f} s "
                       f"and {max(left(), 0):.0f} s were left")
            break
        t0 = time.perf_counter()
        k = i % len(epochs)
        order = epochs[k:] + epochs[:k]
        sides = list(SIDES) if i % 2 == 0 else list(reversed(SIDES))
        for side in sides:
            if side == "airbench" and child is None:
                continue
            for e in order:
                r = child.run(e, seed) if side == "airbench" else {"epochs": e, **ours(e, seed)}  # type: ignore[union-attr]
                runs.append({"seed": seed, "side": side, **r, "epochs": e})
                log(f"  seed {seed} {side} {e:g} epochs: acc {r['accuracy']:.4f} in {r['train_seconds']:.2f} s"
                    + (f" ({r['error']})" if r.get("error") else ""))
        per_seed.append(time.perf_counter() - t0)
    return {"runs": runs, "seeds": seeds[:len(per_seed)], "epochs": epochs, "skipped": skipped,
            **analyse(runs, [s for s in seeds[:len(per_seed)]])}


def analyse(runs: list[dict[str, Any]], seeds: list[int], target: float = TARGET) -> dict[str, Any]:
    """Medians per (side, epochs); time to ``target`` on the curves of medians and per seed; the accuracy gap
    (ours - airbench, percentage points) at each epoch count both sides ran; the largest gap by size."""
    medians = [{"side": side, "epochs": e, "n": sum(1 for r in runs if r["side"] == side and r["epochs"] == e),
                **{k: summarize(r[k] for r in runs if r["side"] == side and r["epochs"] == e)["median"]
                   for k in ("train_seconds", "accuracy")}}
               for side in SIDES for e in sorted({r["epochs"] for r in runs if r["side"] == side})]
    gaps = []
    for e in sorted({m["epochs"] for m in medians}):
        pair = {m["side"]: m["accuracy"] for m in medians if m["epochs"] == e}
        if len(pair) == 2:
            gaps.append({"epochs": e, "gap_pp": 100 * (pair["ours"] - pair["airbench"])})
    finite = [abs(g["gap_pp"]) for g in gaps if math.isfinite(g["gap_pp"])]
    on_medians = times_to(target, medians)
    return {"medians": medians, "target": target, "time_to_target": on_medians,
            "time_to_target_per_seed": [{"seed": s, **times_to(target, [r for r in runs if r["seed"] == s])}
                                        for s in seeds],
            "gaps": gaps, "max_accuracy_gap_pp": max(finite) if finite else math.nan,
            "time_to_94_ratio": on_medians["ratio"]}


def times_to(accuracy: float, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each side's time to ``accuracy`` on its curve (log-time interpolation between its runs, never
    extrapolated; NaN where it does not get there; reached at its cheapest run: that run's time, flagged as an
    upper bound) and ours / airbench's."""
    from recipesearch.analysis.speedup import BELOW_BASELINE, INTERPOLATED, time_to_reach

    out: dict[str, Any] = {}
    for side in SIDES:
        mine = [r for r in rows if r["side"] == side and math.isfinite(r["train_seconds"])
                and math.isfinite(r["accuracy"])]
        if not mine:
            out[side] = {"seconds": math.nan, "upper_bound": False}
            continue
        t, status = time_to_reach(accuracy, ([r["train_seconds"] for r in mine], [r["accuracy"] for r in mine]))
        out[side] = {"seconds": t if status in (INTERPOLATED, BELOW_BASELINE) else math.nan,
                     "upper_bound": status == BELOW_BASELINE}
    out["ratio"] = out["ours"]["seconds"] / out["airbench"]["seconds"]
    return out
