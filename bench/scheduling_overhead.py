"""Scheduling overhead: N trials of known training time through the real search path vs in one process.

Method
1) Two spaces built in code (``make_space``): the digits/resnet8 base recipe, one budget, a random sampler
   over a harmless LR multiplier in [0.95, 1.05] (every trial trains the same number of steps), its
   length chosen from a calibration epoch so a trial trains ~1 s or ~10 s. One trial at a time
   (concurrency 1) with 2 threads, i.e. the whole 2-core machine per trial.
2) Search arm: ``recipesearch.engine.api.search(space, out=...)`` — Optuna + Ray Tune, the CLI's code
   path, with its default live report every 4 trials. From ``trials.csv``: each trial's
   ``datetime_start``/``datetime_complete`` and ``train_seconds``.
3) In-process arm: the very recipes those trials trained (``recipe_json``), run back to back with
   ``fit()`` in this process (data cached, like a reused Ray actor).
4) Per-trial overhead = (time from the first trial's start to the last trial's end - the sum of
   train_seconds) / N: everything a trial slot spends not training (asking the sampler, shipping the
   config, building the model, evaluating, telling the study, rewriting trials.csv, the gap to the next
   trial). Ray's start-up (search call -> first trial start) and the finish (last trial end -> return:
   final report, Ray shutdown) are fixed per search and reported apart. The in-process arm gives the
   same quantities without Ray/Optuna, so the difference is what the search machinery adds.
   Fraction of slot time training = sum(train_seconds) / (concurrency x span).
"""
from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import environment, fmt_summary, goal_text, load_now, md_table, save_figure, summarize

NAME = "scheduling_overhead"
TITLE = "Scheduling overhead: trials through `recipesearch search` (Ray + Optuna) vs back to back in one process"
GOAL_OVERHEAD_S = 0.5
GOAL_TRAIN_FRACTION = 0.90  # for the ~10 s trials
THREADS = 2
BATCH = 64


def base_recipe(epochs: float) -> dict[str, Any]:
    return {
        "name": "bench-overhead", "model": {"name": "resnet8"}, "data": {"name": "digits"},
        "optimizer": {"name": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 5e-4},
        "schedule": {"name": "cosine", "warmup_epochs": 0.1}, "max_duration": round(epochs, 3), "budget": 1.0,
        "batch_size": BATCH, "seed": 0, "threads": THREADS, "device": "cpu",
    }


def make_space(label: str, epochs: float, trials: int):
    from recipesearch.space import space_from_dict

    return space_from_dict({
        "name": f"bench-overhead-{label}",
        "base": base_recipe(epochs),
        "budgets": [1.0],
        "objectives": ["accuracy", "train_seconds"],
        "sampler": {"name": "random", "seed": 0},
        "trials": trials, "concurrency": 1,
        "resources": {"cpus": 1, "gpus": 0}, "threads_per_trial": THREADS, "seed": 0,
        "hparams": {"optimizer.lr": {"scale": [0.95, 1.05]}},
        "metric_split": "test", "baseline": {"seeds": 1}, "confirm": False,  # the scheduler's cost alone
    }, source=f"bench:{NAME}")


def calibrate() -> float:
    """Seconds of training per digits epoch: the fastest of 5 one-epoch runs after a warm-up.

    The fastest, not the median: it estimates the machine unloaded, so a trial's *work* is fixed (its epochs)
    and a busy moment during calibration cannot shrink the "10 s" trials to 2 s; each trial's actual
    train_seconds is measured anyway.
    """
    from recipesearch.recipe import recipe_from_dict
    from recipesearch.train.loop import fit

    rec = recipe_from_dict(base_recipe(1.0))
    fit(rec)
    return float(min(fit(rec).train_seconds for _ in range(5)))


def _trial_niceness(stop: threading.Event, seen: set[int]) -> None:
    """Poll /proc for Ray trial actors (``ray::ImplicitFunc``...) and note their nice values."""
    while not stop.wait(0.5):
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                text = stat.read_text()
            except OSError:
                continue
            name = text[text.find("(") + 1:text.rfind(")")]
            if name.startswith("ray::Impl"):  # the comm field is cut to 15 characters
                seen.add(int(text[text.rfind(")") + 2:].split()[16]))  # field 19: nice


def search_arm(space, out: Path) -> dict[str, Any]:
    import pandas as pd

    from recipesearch.engine.api import search

    stop, nice = threading.Event(), set()
    watcher = threading.Thread(target=_trial_niceness, args=(stop, nice), daemon=True)
    watcher.start()
    t0 = time.time()
    try:
        df = search(space, out=out, quiet=True).trials
    finally:
        stop.set()
    t1 = time.time()
    df = df.sort_values("number")
    ok = df[df.state == "COMPLETE"]
    start = pd.to_datetime(df["datetime_start"]).map(lambda d: d.timestamp())
    end = pd.to_datetime(df["datetime_complete"]).map(lambda d: d.timestamp())
    trials = [{"number": int(r.number), "state": r.state, "train_seconds": float(r.train_seconds),
               "start": float(s), "end": float(e), "recipe_json": r.recipe_json}
              for r, s, e in zip(df.itertuples(), start, end)]
    return {"call_start": t0, "call_end": t1, "trials": trials, "completed": int(len(ok)), "trial_nice": sorted(nice),
            "failed_errors": [str(e) for e in df.loc[df.state != "COMPLETE", "error"].tolist()]}


def inprocess_arm(recipes: list[dict[str, Any]]) -> dict[str, Any]:
    from recipesearch.recipe import recipe_from_dict
    from recipesearch.train.loop import fit

    t0 = time.time()
    trials = []
    for rec in recipes:
        s = time.time()
        res = fit(recipe_from_dict(rec))
        trials.append({"train_seconds": res.train_seconds, "start": s, "end": time.time()})
    return {"call_start": t0, "call_end": time.time(), "trials": trials, "completed": len(trials)}


def analyse(arm: dict[str, Any], concurrency: int = 1) -> dict[str, Any]:
    """Overheads of one arm (see the module docstring); 'steady' leaves the first trial out."""
    slots = sorted(arm["trials"], key=lambda t: t["start"])
    n = len(slots)
    trained = [t["train_seconds"] if np.isfinite(t["train_seconds"]) else 0.0 for t in slots]
    last = max(t["end"] for t in slots)
    span, train = last - slots[0]["start"], sum(trained)
    per_slot = [t["end"] - t["start"] - tr for t, tr in zip(slots, trained)]
    gaps = [b["start"] - a["end"] for a, b in zip(slots, slots[1:])]
    out = {
        "n": n, "train_seconds_total": train, "span_seconds": span,
        "overhead_per_trial": (concurrency * span - train) / n,
        "train_fraction_of_slot": train / (concurrency * span) if span > 0 else float("nan"),
        "in_slot_overhead": summarize(per_slot), "gap_between_trials": summarize(gaps),
        "startup_seconds": slots[0]["start"] - arm["call_start"], "finish_seconds": arm["call_end"] - last,
        "train_fraction_of_call": train / (arm["call_end"] - arm["call_start"]),
        "steady_overhead_per_trial": float("nan"), "steady_train_fraction": float("nan"),
        "first_trial_extra_seconds": float("nan"),
    }
    if n > 1:
        span2, train2 = last - slots[1]["start"], sum(trained[1:])
        out["steady_overhead_per_trial"] = (concurrency * span2 - train2) / (n - 1)
        out["steady_train_fraction"] = train2 / (concurrency * span2) if span2 > 0 else float("nan")
        out["first_trial_extra_seconds"] = per_slot[0] - out["steady_overhead_per_trial"]
    return out


def run(quick: bool = False) -> dict[str, Any]:
    import torch

    torch.set_num_threads(THREADS)
    env = environment()
    epoch_s = calibrate()
    sizes = [("1s", 1.0, 4 if quick else 8), ("10s", 10.0, 2 if quick else 4)]
    repeats = 1 if quick else 2
    print(f"[{NAME}] calibration: {epoch_s:.2f} s per digits epoch (batch {BATCH}, {THREADS} threads)", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    results = []
    try:
        for r in range(repeats):
            for label, target, n in sizes:
                epochs = max(0.05, target / epoch_s)
                space = make_space(label, epochs, n)
                out = tmp / f"{label}-{r}"
                print(f"  repeat {r}: {n} trials of ~{target:g} s ({epochs:.2f} epochs) through search", flush=True)
                s_arm = search_arm(space, out)
                recipes = [json.loads(t["recipe_json"]) for t in s_arm["trials"] if isinstance(t["recipe_json"], str)]
                print(f"  repeat {r}: the same {len(recipes)} recipes back to back in-process", flush=True)
                p_arm = inprocess_arm(recipes)
                sa, pa = analyse(s_arm), analyse(p_arm)
                ok = [(t["train_seconds"], q["train_seconds"]) for t, q in
                      zip([t for t in s_arm["trials"] if isinstance(t["recipe_json"], str)], p_arm["trials"])]
                sa["train_ratio_vs_inprocess"] = summarize(a / b for a, b in ok if np.isfinite(a) and b > 0)
                for t in s_arm["trials"]:
                    t.pop("recipe_json", None)
                results.append({"repeat": r, "size": label, "target_seconds": target, "epochs": epochs,
                                "trials": n, "load": load_now(), "search": {**s_arm, **sa},
                                "inprocess": {**p_arm, **pa}})
                print(f"    search: overhead/trial {sa['overhead_per_trial']:.2f} s, train fraction "
                      f"{sa['train_fraction_of_slot']:.3f}, start-up {sa['startup_seconds']:.1f} s; in-process: "
                      f"{pa['overhead_per_trial']:.2f} s, {pa['train_fraction_of_slot']:.3f}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    summary = {}
    for label, _target, _ in sizes:
        rows = [x for x in results if x["size"] == label]
        summary[label] = {
            arm: {k: summarize(x[arm][k] for x in rows) for k in
                  ("overhead_per_trial", "steady_overhead_per_trial", "train_fraction_of_slot",
                   "steady_train_fraction", "first_trial_extra_seconds", "startup_seconds", "finish_seconds",
                   "train_fraction_of_call")}
            for arm in ("search", "inprocess")}
        summary[label]["excess_overhead_per_trial"] = summarize(
            x["search"]["steady_overhead_per_trial"] - x["inprocess"]["steady_overhead_per_trial"] for x in rows)
        summary[label]["train_ratio_vs_inprocess"] = summarize(
            x["search"]["train_ratio_vs_inprocess"]["median"] for x in rows)
        summary[label]["trial_nice"] = sorted({n for x in rows for n in x["search"].get("trial_nice", [])})
        summary[label]["train_seconds_per_trial"] = summarize(
            t["train_seconds"] for x in rows for t in x["search"]["trials"] if np.isfinite(t["train_seconds"]))
    over = max(summary[k]["search"]["steady_overhead_per_trial"]["median"] for k in summary)
    frac10 = summary["10s"]["search"]["steady_train_fraction"]["median"]
    return {"name": NAME, "quick": quick, "repeats": repeats, "environment": env, "epoch_seconds": epoch_s,
            "threads": THREADS, "concurrency": 1, "runs": results, "summary": summary,
            "goal": {"overhead_max_s": GOAL_OVERHEAD_S, "train_fraction_min": GOAL_TRAIN_FRACTION,
                     "overhead_met": bool(over <= GOAL_OVERHEAD_S), "fraction_met": bool(frac10 >= GOAL_TRAIN_FRACTION)},
            "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z")}


def plot(result: dict[str, Any]) -> str | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [x for x in result["runs"] if x["repeat"] == 0]
    if not runs:
        return None
    fig, axes = plt.subplots(len(runs), 1, figsize=(8, 1.5 * len(runs) * 2), squeeze=False)
    for ax, x in zip(axes[:, 0], runs):
        for row, arm in enumerate(("search", "inprocess")):
            a = x[arm]
            t0 = a["call_start"]
            for t in a["trials"]:
                ax.barh(row, t["end"] - t["start"], left=t["start"] - t0, color="lightgray", edgecolor="k", lw=0.5)
                tr = t["train_seconds"] if np.isfinite(t["train_seconds"]) else 0
                # training is the end of the slot (evaluation after it is short): draw it as the first part
                ax.barh(row, tr, left=t["start"] - t0, color="tab:green")
            ax.barh(row, a["call_end"] - a["call_start"], left=0, fill=False, edgecolor="tab:red", lw=0.8)
        ax.set_yticks([0, 1], ["search (Ray+Optuna)", "in-process"], fontsize=8)
        ax.set_xlabel("seconds since the call started (green: train_seconds; gray: rest of the trial slot; red: whole call)",
                      fontsize=7)
        ax.set_title(f"{x['trials']} trials of ~{x['target_seconds']:g} s", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, NAME)


def render(result: dict[str, Any]) -> str:
    s = result["summary"]
    rows = []
    for label in s:
        for arm, name in (("search", "`recipesearch search` (Ray+Optuna)"), ("inprocess", "back to back, one process")):
            a = s[label][arm]
            rows.append([f"~{label}", name,
                         fmt_summary(s[label]["train_seconds_per_trial"], ".2f", "range") if arm == "search" else "same recipes",
                         fmt_summary(a["steady_overhead_per_trial"], ".2f", "range"),
                         fmt_summary(a["steady_train_fraction"], ".3f", "range"),
                         fmt_summary(a["first_trial_extra_seconds"], ".1f", "range"),
                         fmt_summary(a["startup_seconds"], ".1f", "range"), fmt_summary(a["finish_seconds"], ".1f", "range"),
                         fmt_summary(a["overhead_per_trial"], ".2f", "range"),
                         fmt_summary(a["train_fraction_of_slot"], ".3f", "range"),
                         fmt_summary(a["train_fraction_of_call"], ".3f", "range")])
    g = result["goal"]
    nice = sorted({n for v in s.values() for n in v.get("trial_nice", [])})
    excess = "; ".join(f"~{k}: {fmt_summary(v['excess_overhead_per_trial'], '.2f', 'range')} s"
                       for k, v in s.items())
    img = plot(result)
    n_trials = sorted({(x["size"], x["trials"]) for x in result["runs"]})
    parts = [
        "**What**: trials of fixed, known training time (~1 s and ~10 s of digits/resnet8 on an idle machine: "
        "the number of epochs is set from the fastest of 5 one-epoch calibration runs, "
        f"{result['epoch_seconds']:.2f} s per epoch; their measured train_seconds are in the table) through the real search path "
        "(`recipesearch.engine.api.search`: Optuna sampler, Ray Tune trial actor, study in SQLite, trials.csv "
        "and live report) against the very same recipes trained back to back with `fit()` in one process.",
        f"**How**: one trial at a time (concurrency 1), {result['threads']} torch threads per trial; "
        f"trials per search: {', '.join(f'{n} x ~{k}' for k, n in n_trials)}; {result['repeats']} repeat(s)"
        f"{' (--quick)' if result['quick'] else ''}. Per-trial overhead (steady state) = (second trial's start → "
        "last trial's end, minus those trials' train_seconds) / (N-1): everything a slot does besides training "
        "(model build, evaluation, sampler ask/tell, storage, trials.csv, the gap to the next trial). Costs paid "
        "once per search are reported apart: start-up (call → first trial: Ray, study, baselines), the first "
        "trial's extra (a fresh Ray actor imports torch and decodes the data), and finish (last trial → "
        "return: final report, Ray shutdown); the all-in columns spread them over the N trials, honest for "
        "short searches. Cells: median [min–max] over repeats.",
        f"**Goals** (steady state, median): per-trial overhead ≤ {g['overhead_max_s']} s: "
        f"{goal_text(g['overhead_met'])}; ≥ {g['train_fraction_min']:.0%} of slot time training for ~10 s "
        f"trials: {goal_text(g['fraction_met'])}. The once-per-search costs are not part of these goals and are "
        "shown next to them.",
        "",
        md_table(["trials", "path", "train s/trial", "overhead s/trial (steady)", "train fraction of slot (steady)",
                  "first trial extra s", "start-up s", "finish s", "all-in overhead s/trial (first trial incl.)",
                  "all-in train fraction of slot", "train fraction of whole call"], rows),
        "",
        f"What the search machinery adds per trial (steady state) over the in-process loop: {excess}.",
        "",
        "Training itself, same recipe, search trial / in-process (train_seconds ratio, median of the "
        "per-search medians): " + "; ".join(
            f"~{k}: {fmt_summary(v.get('train_ratio_vs_inprocess', {}), '.2f', 'range')}" for k, v in s.items())
        + ". Nice value of the Ray trial processes seen while they ran: " + (", ".join(map(str, nice)) or "not recorded")
        + "." + (" Ray starts its workers niced (raylet's `worker_niceness`, env `RAY_worker_niceness`, default 15), "
                 "so on a shared machine any process at nice 0 gets the CPU before a trial does: a trial's "
                 "train_seconds then depend on the other load more than an in-process run's (a ratio ≠ 1 here "
                 "says how the load differed between the two arms, not that Ray trains slower or faster)."
                 if any(n > 0 for n in nice) else ""),
    ]
    if img:
        parts += ["", f"![timeline of trial slots]({img})"]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    a = p.parse_args(argv)
    from bench.common import save_result

    res = run(a.quick)
    save_result(NAME, res)
    print(render(res))


if __name__ == "__main__":
    main()
