"""A recipe search on the GPU (issue 30, GPU item 6): trials packed per GPU, and the search's best confirmed recipe
against airbench.

Packing (``packing``): k trials at a time on one GPU, k = 1, 2, 4. With Ray (``--packing ray``; auto where it is
importable and CUDA is there), each k is a short ``recipesearch search`` of the airbench94 space with
``--gpus-per-trial 1/k --concurrency k`` (confirmation off: packing is what is measured); each trial's images/s
is its ``throughput`` in trials.csv, the total is all trials' images over the search's wall time. Without Ray
(``--packing processes``: Ray's wheel is larger than what travels to the lent machine with the data), each k
starts k processes at once, as Ray's fractional GPUs place k trial workers, each training the space's base
recipe at ``budget`` ``trials_per_process`` times (fresh seeds) through ``fit``; the total is all their images
over the span from the first training start to the last training end. Both: GPU utilisation sampled by
``nvidia-smi`` every 200 ms while the level runs (``torch.cuda.utilization`` where nvidia-smi is missing; the
machine's CPU busy share from /proc/stat on the CPU stand-in, and the rows say so).

Search (``search``): ``recipesearch search`` of the airbench94 space cut to fit the time plan (the budgets,
proposals and seeds of ``SIZES``; baseline without its LR sweep), confirmation on. One trial a GPU with the
in-process executor (trial times are the objective: a shared GPU would blur them); with Ray, at the packing
level whose total images/s was best. Then its headline recipe (the confirmed one; else the repeated recipe
curve with the largest speedup, flagged unconfirmed) against airbench's train94 on the same images, fresh seeds,
sides alternating (``gpu_airbench.alternate``), all training images: ``best_time_to_94_vs_airbench`` is its time
to 94 % over airbench's, on the curves of medians. Goal <= 0.9.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from bench.common import ROOT, summarize

SPACE = ROOT / "search_spaces" / "cifar10_airbench94.yaml"
GOAL_VS_AIRBENCH = 0.9

PACK_CHILD = """
import json, sys, time
from bench.common import fit_or_nan
for data in json.loads(sys.argv[1]):
    t0 = time.time()
    rec = fit_or_nan(data, "bench:gpu:packing")
    print(json.dumps({**rec, "seed": data["seed"], "wall_start": t0, "wall_end": time.time()}), flush=True)
"""


class UtilSampler:
    """Samples GPU utilisation (%) in the background: ``nvidia-smi`` in loop mode, else
    ``torch.cuda.utilization``, else (no CUDA: the CPU stand-in) the machine's CPU busy share from /proc/stat."""

    def __init__(self, cuda: bool, interval: float = 0.2):
        self.interval, self.samples = interval, []  # (time.time(), percent)
        self._stop = threading.Event()
        self._proc: subprocess.Popen[str] | None = None
        if cuda and shutil.which("nvidia-smi"):
            self.backend = "nvidia-smi"
        elif cuda:
            self.backend = "torch.cuda.utilization"
        else:
            self.backend = "CPU busy share from /proc/stat (CPU stand-in: no GPU)"

    def __enter__(self) -> UtilSampler:
        if self.backend == "nvidia-smi":
            self._proc = subprocess.Popen(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                                           "-lms", str(int(self.interval * 1000))], stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, text=True)
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        if self._proc is not None:
            assert self._proc.stdout is not None
            for line in self._proc.stdout:
                try:
                    self.samples.append((time.time(), float(line.split(",")[0])))
                except ValueError:
                    continue
            return
        last = _cpu_times()
        while not self._stop.wait(self.interval):
            if self.backend == "torch.cuda.utilization":
                import torch

                try:
                    self.samples.append((time.time(), float(torch.cuda.utilization())))
                except Exception:  # noqa: BLE001 - no NVML: nothing to sample
                    return
            else:
                now = _cpu_times()
                busy, total = now[0] - last[0], now[1] - last[1]
                last = now
                if total > 0:
                    self.samples.append((time.time(), 100.0 * busy / total))

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait()
        self._thread.join(timeout=5)

    def summary(self, start: float | None = None, end: float | None = None) -> dict[str, Any]:
        """Mean, median and 90th percentile of the samples in [start, end] (all when not given)."""
        values = [v for t, v in self.samples if (start is None or t >= start) and (end is None or t <= end)]
        s = summarize(values)
        p90 = float(sorted(values)[int(0.9 * (len(values) - 1))]) if values else math.nan
        return {"backend": self.backend, "n": s["n"], "mean": float(sum(values) / len(values)) if values else math.nan,
                "median": s["median"], "p90": p90}


def _cpu_times() -> tuple[float, float]:
    try:
        fields = [float(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return 0.0, 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)
    return sum(fields) - idle, sum(fields)


def ray_problem() -> str | None:
    import importlib.util

    return None if importlib.util.find_spec("ray") is not None else "Ray is not importable here"


def space_file(directory: Path, base: dict[str, Any], sizes: dict[str, Any], confirm: bool, trials: int,
               gpus: float, seed: int = 0) -> Path:
    """The airbench94 space with ``base`` (the recipe dict, its data where this script wrote it) and the sizes of
    this run: budgets, baseline seeds (no LR sweep), the confirmation's seeds (or none), trials, checkpoints off."""
    space = yaml.safe_load(SPACE.read_text())
    space.update(
        name=f"{space['name']} (bench/gpu.py cut)", base=base, budgets=list(sizes["budgets"]), trials=trials,
        baseline={"seeds": sizes["baseline_seeds"], "tune_lr": False},
        confirm={"top_k": 1, "seeds": sizes["confirm_seeds"], "max_share": 0.9} if confirm else {"enabled": False},
        sampler={"name": "tpe", "seed": seed, "n_startup_trials": 4}, concurrency=1,
        resources={"cpus": 1, "gpus": gpus}, threads_per_trial=sizes.get("threads", 4), checkpoint_minutes=0, seed=seed)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "space.yaml"
    path.write_text(yaml.safe_dump(space, sort_keys=False))
    return path


def run_search(space: Path, out: Path, args: list[str], timeout: float) -> dict[str, Any]:
    """``recipesearch search`` in a child process (the command a user runs); its wall seconds, exit code and the
    tail of its log (all of it in ``out``.log)."""
    cmd = [sys.executable, "-m", "recipesearch", "search", str(space), "--out", str(out), "--quiet", "--no-report",
           "--force", *args]
    log = out.parent / f"{out.name}.log"
    t0 = time.time()
    with open(log, "w") as f:
        try:
            code = subprocess.run(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, timeout=max(timeout, 1),
                                  env={**os.environ, "PYTHONUNBUFFERED": "1"}).returncode
        except subprocess.TimeoutExpired:
            code = None
    tail = log.read_text().strip().splitlines()[-6:]
    return {"command": " ".join(["recipesearch", *cmd[3:]]), "returncode": code, "timed_out": code is None,
            "wall_start": t0, "wall_seconds": time.time() - t0, "log_tail": "\n".join(tail)[-1500:]}


def trials_of(out: Path) -> list[dict[str, Any]]:
    """The finished trials of a run directory (trials.csv as the reader types it): number, stage, budget,
    throughput, train_seconds, accuracies, samples (images trained on)."""
    from recipesearch.report.info import load_run

    try:
        df = load_run(out).trials
    except Exception:  # noqa: BLE001 - a search cut short may have no table: no trials
        return []
    import pandas as pd

    rows = []
    for _, t in df[df["state"] == "COMPLETE"].iterrows():
        seconds, rate = float(t.get("train_seconds", math.nan)), float(t.get("throughput", math.nan))
        when = [pd.Timestamp(t[c]).timestamp() if isinstance(t.get(c), str) and t.get(c) else math.nan
                for c in ("datetime_start", "datetime_complete")]  # local time, whole seconds
        rows.append({"number": int(t["number"]), "stage": str(t.get("stage", "")), "budget": float(t["budget"]),
                     "train_seconds": seconds, "images_per_s": rate, "samples": rate * seconds,
                     "accuracy": float(t.get("accuracy", math.nan)), "val_accuracy": float(t.get("val_accuracy", math.nan)),
                     "wall_start": when[0], "wall_end": when[1]})
    return rows


def pack_processes(k: int, base: dict[str, Any], sizes: dict[str, Any], seed0: int, timeout: float) -> dict[str, Any]:
    """k processes at once, each training ``base`` at ``sizes['budget']`` ``trials_per_process`` times."""
    procs = []
    for p in range(k):
        recipes = [{**base, "budget": sizes["budget"], "seed": seed0 + 100 * p + i} for i in range(sizes["trials_per_process"])]
        procs.append(subprocess.Popen([sys.executable, "-c", PACK_CHILD, json.dumps(recipes)], cwd=ROOT,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    trials, errors, t_end = [], [], time.time() + timeout
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=max(1.0, t_end - time.time()))
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            errors.append("timed out")
        for line in out.splitlines():
            if line.startswith("{"):
                r = json.loads(line)
                end = r["wall_end"] - (r.get("eval_seconds") or 0.0)
                trials.append({**r, "images_per_s": r.get("throughput", math.nan),
                               "samples": r.get("throughput", math.nan) * r["train_seconds"],
                               "train_start": end - r["train_seconds"], "train_end": end})
        if proc.returncode:
            errors.append((err.strip().splitlines() or [f"exit {proc.returncode}"])[-1][:300])
    errors += sorted({t["error"] for t in trials if t.get("error")})
    ok = [t for t in trials if math.isfinite(t["train_seconds"])]
    span = (max(t["train_end"] for t in ok) - min(t["train_start"] for t in ok)) if ok else math.nan
    return {"trials": trials, "errors": errors, "span": span,
            "window": (min(t["train_start"] for t in ok), max(t["train_end"] for t in ok)) if ok else None}


def packing(base: dict[str, Any], sizes: dict[str, Any], method: str, cuda: bool, workdir: Path,
            left: Callable[[], float], log: Callable[[str], None] = print) -> dict[str, Any]:
    """Per trials-per-GPU k: images/s per trial (median), in total, GPU utilisation (module docstring)."""
    out: dict[str, Any] = {}
    for level, k in enumerate(sizes["levels"]):
        key = str(k)
        if level and out.get(str(sizes["levels"][level - 1]), {}).get("wall_seconds", 0) * 1.5 > left():
            out[key] = {"skipped": f"out of time: {max(left(), 0):.0f} s left"}
            continue
        t0 = time.time()
        with UtilSampler(cuda) as util:
            if method == "ray":
                space = space_file(workdir / f"pack{k}", base, sizes, confirm=False, trials=sizes["ray_trials"] * k,
                                   gpus=1.0 / k if cuda else 0.0)
                cpus = [] if cuda else ["--cpus-per-trial", f"{1.0 / k:g}"]  # the CPU stand-in packs CPUs
                ran = run_search(space, workdir / f"pack{k}" / "run", ["--concurrency", str(k), "--gpus-per-trial",
                                                                      f"{1.0 / k if cuda else 0:g}", *cpus], left())
                trials = trials_of(workdir / f"pack{k}" / "run")
                starts = [t["wall_start"] for t in trials if math.isfinite(t["wall_start"])]
                ends = [t["wall_end"] for t in trials if math.isfinite(t["wall_end"])]
                # the trials' own span (whole seconds: trials.csv's dates), the Ray start-up left out; utilisation
                # over the whole level (the dates are local time, the samples' clock is not)
                span = max(ends) - min(starts) if starts and ends else math.nan
                window = None
                errors = [] if ran["returncode"] == 0 else [ran["log_tail"].splitlines()[-1][:300] if ran["log_tail"]
                                                            else f"exit {ran['returncode']}"]
            else:
                got = pack_processes(k, base, sizes, 7000 + 1000 * k, left())
                trials, span, window, errors = got["trials"], got["span"], got["window"], got["errors"]
        ok = [t for t in trials if math.isfinite(t.get("images_per_s", math.nan))]
        images = sum(t["samples"] for t in ok)
        total = images / span if ok and span and math.isfinite(span) else math.nan
        wall = time.time() - t0
        out[key] = {"trials_per_gpu": k, "gpus_per_trial": 1.0 / k, "method": method, "n_trials": len(ok),
                    "images_per_s_per_trial": summarize(t["images_per_s"] for t in ok),
                    "images_per_s_total": total, "span_seconds": span, "wall_seconds": wall,
                    "images_per_s_over_wall": images / wall if ok else math.nan,
                    "gpu_utilisation": util.summary(*(window or (None, None))), "trials": trials, "errors": errors}
        log(f"  {k} trial(s) per GPU: {out[key]['images_per_s_per_trial']['median']:.0f} images/s per trial, "
            f"{total:.0f} in total, utilisation {out[key]['gpu_utilisation']['mean']:.0f} % "
            f"({out[key]['gpu_utilisation']['backend']})" + (f"; errors: {errors}" if errors else ""))
    return out


def best_level(pack: dict[str, Any]) -> int:
    """The trials-per-GPU with the most images/s in total (1 when none was measured)."""
    rates = {int(k): v["images_per_s_total"] for k, v in pack.items()
             if isinstance(v, dict) and math.isfinite(v.get("images_per_s_total", math.nan))}
    return max(rates, key=rates.__getitem__) if rates else 1


def headline_recipe(out: Path) -> dict[str, Any]:
    """The search's headline: its confirmed recipe, else the repeated recipe curve with the largest speedup
    (unconfirmed), else the best single proposal; with its recipe dict (trials.csv ``recipe_json``)."""
    from recipesearch.analysis.frontier import Objectives, frontier
    from recipesearch.report.info import load_run

    files = load_run(out)
    fr = frontier(files.trials, Objectives.from_run_meta(files.run_meta))
    h = fr.headline
    number, how = (h.number, "confirmed") if h.confirmed and h.number is not None else (None, "")
    if number is None and len(fr.recipes):
        number, how = int(fr.recipes.iloc[0]["number"]), "unconfirmed (largest speedup among repeated recipes)"
    if number is None:
        done = files.trials[(files.trials["state"] == "COMPLETE") & ~files.trials["is_baseline"].astype(bool)]
        if done.empty:
            return {"number": None, "how": "no proposal finished", "verdict": h.verdict}
        best = done.sort_values(fr.metric, ascending=False).iloc[0]
        number, how = int(best["number"]), "unconfirmed (best single proposal on the selection metric)"
    row = files.trials[files.trials["number"] == number].iloc[0]
    return {"number": number, "how": how, "confirmed": how == "confirmed", "verdict": h.verdict,
            "algorithms": str(row.get("algorithms") or ""), "speedup": h.speedup,
            "speedup_ci": [h.speedup_ci_low, h.speedup_ci_high], "recipe": json.loads(row["recipe_json"])}


def search(base: dict[str, Any], sizes: dict[str, Any], cuda: bool, workdir: Path, method: str, k: int,
           versus: Callable[[dict[str, Any]], dict[str, Any]], left: Callable[[], float],
           log: Callable[[str], None] = print) -> dict[str, Any]:
    """The cut search with confirmation, then its headline recipe against airbench (module docstring)."""
    trials = sizes["baseline_seeds"] * len(sizes["budgets"]) + sizes["proposals"]
    ray = method == "ray"
    gpus = (1.0 / k if ray else 1.0) if cuda else 0.0
    space = space_file(workdir, base, sizes, confirm=True, trials=trials, gpus=gpus, seed=1)
    args = ["--concurrency", str(k), "--gpus-per-trial", f"{gpus:g}"] if ray else ["--executor", "inprocess"]
    if ray and not cuda:
        args += ["--cpus-per-trial", f"{1.0 / k:g}"]
    with UtilSampler(cuda) as util:
        ran = run_search(space, workdir / "run", args, left() - sizes["versus_reserve"])
    rows = trials_of(workdir / "run")
    out: dict[str, Any] = {"space": str(SPACE.relative_to(ROOT)), "trials_asked": trials,
                           "executor": "ray" if ray else "inprocess",
                           "trials_per_gpu": k, **{f: sizes[f] for f in ("budgets", "baseline_seeds", "proposals",
                                                                         "confirm_seeds")},
                           "run": ran, "trials": rows, "gpu_utilisation": util.summary(),
                           "images_per_s_per_trial": summarize(t["images_per_s"] for t in rows),
                           "confirmation_runs": sum(1 for t in rows if t["stage"] == "confirm")}
    log(f"  search: {len(rows)} trials finished in {ran['wall_seconds']:.0f} s (exit {ran['returncode']})")
    try:
        head = headline_recipe(workdir / "run")
    except Exception as exc:  # noqa: BLE001 - a search cut short: say so, compare nothing
        head = {"number": None, "how": f"no headline: {type(exc).__name__}: {exc}"[:300]}
    out["headline"] = {k2: v for k2, v in head.items() if k2 != "recipe"}
    if head.get("recipe") is None:
        out["best_time_to_94_vs_airbench"] = math.nan
        out["versus"] = {"skipped": head["how"]}
        return out
    log(f"  headline: trial {head['number']} ({head['how']}): {head.get('algorithms') or 'no methods'}")
    out["recipe"] = head["recipe"]
    out["versus"] = versus(head["recipe"])
    out["best_time_to_94_vs_airbench"] = out["versus"]["time_to_94_ratio"]
    out["goal"] = GOAL_VS_AIRBENCH
    ratio = out["best_time_to_94_vs_airbench"]
    out["met"] = bool(ratio <= GOAL_VS_AIRBENCH and head.get("confirmed")) if math.isfinite(ratio) else None
    return out
