"""Per-algorithm cost: throughput of each registered algorithm alone relative to the baseline recipe.

In the spirit of Composer's table of RandAugment depth against images/s: what does switching one method
on cost (or save) per image, before any effect on accuracy?

Method
1) Base: ``recipes/digits_baseline.yaml`` (resnet8, batch 64, SGD + cosine) shortened with the budget to
   ``EPOCHS`` epochs, so every progress-scheduled method (selective backprop, layer freezing, progressive
   resizing, SWA) runs through its whole schedule, dilated. One arm per registered algorithm at its
   literature defaults, plus RandAugment at depth 1, 2, 3, plus one per optimizer in ``OPTIMIZER_ARMS``
   (Muon in place of the baseline's SGD); everything else identical.
2) Arms run in rotated order each repeat, with a baseline run inserted after every ``BASELINE_EVERY``
   arms; each arm's ratio is its images/s over the mean of the two baseline runs around it (drift
   correction on a shared machine). images/s and the data-wait fraction come from ``TrainResult``
   (training steps only; data wait = time producing the batch incl. AFTER_DATALOADER hooks).
3) ``torch_compile`` pays its compile inside ``train_seconds`` (by design of that algorithm). It runs
   after ``torch._dynamo.reset()`` each time; its steady-state images/s is taken from epochs after the
   first (timestamps from the Trainer's ``on_epoch_end``) and the compile time is estimated as the
   first epoch's time minus a steady epoch's time.
4) An algorithm that raises gets a row with the error.
5) Evaluation (the test split, after training) is timed too: ``flip_tta`` costs nothing per training image
   and a second forward pass per evaluated one, so its row's cost is the eval-time ratio. Patch
   whitening's one-off estimate (inside train_seconds) is reported in its note.
"""
from __future__ import annotations

import argparse
import time
import traceback
from typing import Any

import numpy as np
import torch

from bench.common import (
    ROOT,
    environment,
    fmt_summary,
    load_now,
    md_table,
    save_figure,
    summarize,
)

NAME = "algorithm_cost"
TITLE = "Per-algorithm cost: images/s relative to the baseline, and data-wait fraction"
BASE_RECIPE = ROOT / "recipes" / "digits_baseline.yaml"
EPOCHS = 2  # per run; digits at batch 64 is 22 steps per epoch
BASELINE_EVERY = 2
SLOW = {"torch_compile"}  # measured fewer times: compile dominates
# Options that differ from the literature defaults because of the model: Squeeze-Excite's default only
# touches convs with >= 128 channels (ImageNet ResNets); ResNet-8's widest is 64.
MODEL_OPTIONS = {"squeeze_excite": {"min_channels": 64},
                 # digits refuses a flip (it changes the label); the cost of the second view does not care
                 "flip_tta": {"force": True}}
# Optimizers are no algorithms but cost per step like one: arm label -> fields merged into the base recipe's
# ``optimizer`` (SGD's lr/momentum/decay stay, for what Muon leaves). Carried under the key OPTIMIZER.
OPTIMIZER = "optimizer"
OPTIMIZER_ARMS: dict[str, dict[str, Any]] = {"muon(optimizer)": {"name": "muon"}}


def arms() -> dict[str, dict[str, dict[str, Any]]]:
    """Arm label -> the recipe's ``algorithms`` mapping (an optimizer arm's: ``{OPTIMIZER: fields}``)."""
    from recipesearch.algorithms import list_algorithms

    out: dict[str, dict[str, dict[str, Any]]] = {}
    for name in list_algorithms():
        if name == "randaugment":
            for depth in (1, 2, 3):
                out[f"randaugment(depth={depth})"] = {"randaugment": {"depth": depth}}
        elif name in MODEL_OPTIONS:
            opts = MODEL_OPTIONS[name]
            out[f"{name}({', '.join(f'{k}={v}' for k, v in opts.items())})"] = {name: dict(opts)}
        else:
            out[name] = {name: {}}
    for label, fields in OPTIMIZER_ARMS.items():
        out[label] = {OPTIMIZER: dict(fields)}
    return out


def _recipe(base, algorithms: dict[str, dict[str, Any]], epochs: float):
    from recipesearch.recipe import recipe_from_dict

    data = base.to_dict()
    algorithms = dict(algorithms)
    data["optimizer"] = {**data["optimizer"], **algorithms.pop(OPTIMIZER, {})}
    data.update(algorithms=algorithms, budget=epochs / base.max_duration, threads=2, device="cpu")
    return recipe_from_dict(data, source=f"bench:{NAME}")


def run_one(recipe, bundle, compile_reset: bool = False) -> dict[str, Any]:
    """Train like ``fit`` (Trainer.train, then evaluate), also timing the process's CPU seconds."""
    from recipesearch.train.loop import Trainer, evaluate

    if compile_reset:
        import torch._inductor.config as inductor_config

        torch._dynamo.reset()
        inductor_config.compile_threads = 1  # no compile-worker pool left competing with the next arms
    stamps: list[float] = []
    trainer = Trainer(recipe, data=bundle, on_epoch_end=lambda s, m: stamps.append(time.perf_counter()))
    start, cpu0 = time.perf_counter(), time.process_time()
    seconds, data_seconds = trainer.train()
    cpu = time.process_time() - cpu0
    state = trainer.state
    eval_start = time.perf_counter()
    accuracy, _ = evaluate(state, bundle.test.images, bundle.test.labels)
    eval_seconds = time.perf_counter() - eval_start
    return {"eval_seconds": eval_seconds, "whitening_seconds": state.extra.get("patch_whitening_seconds"),
            "images_per_s": state.samples_seen / seconds, "images_per_cpu_s": state.samples_seen / cpu,
            "train_seconds": seconds, "cpu_seconds": cpu, "data_wait_fraction": data_seconds / seconds,
            "accuracy": accuracy, "steps": state.step, "samples": state.samples_seen,
            "epoch_seconds": list(np.diff([start] + stamps))}


def _schedule(labels: list[str], repeats: int, slow_repeats: int) -> list[tuple[int, str]]:
    """Rotated order per repeat, a baseline at the start and after every BASELINE_EVERY arms."""
    seq: list[tuple[int, str]] = []
    for r in range(repeats):
        todo = [lab for lab in labels[r % len(labels):] + labels[:r % len(labels)]
                if lab.split("(")[0] not in SLOW or r < slow_repeats]
        seq.append((r, "baseline"))
        for i, lab in enumerate(todo):
            seq.append((r, lab))
            if (i + 1) % BASELINE_EVERY == 0 or i == len(todo) - 1:
                seq.append((r, "baseline"))
    return seq


def run(quick: bool = False, repeats: int | None = None, only: list[str] | None = None) -> dict[str, Any]:
    from recipesearch.data import load_data
    from recipesearch.recipe import load_recipe

    torch.set_num_threads(2)
    repeats = repeats or (2 if quick else 4)
    env = environment()
    base = load_recipe(BASE_RECIPE)
    bundle = load_data(base.data, torch.device("cpu"))
    all_arms = arms()
    if only:
        all_arms = {k: v for k, v in all_arms.items() if k.split("(")[0] in only}
    labels = list(all_arms)
    seq = _schedule(labels, repeats, 1)
    print(f"[{NAME}] {len(labels)} arms, {repeats} repeats, {len(seq)} runs of {EPOCHS} epochs", flush=True)
    run_one(_recipe(base, {}, 1), bundle)  # untimed warm-up
    runs: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    for i, (r, label) in enumerate(seq):
        if label in errors:
            continue
        algos = {} if label == "baseline" else all_arms[label]
        rec = {"index": i, "repeat": r, "arm": label, "load": load_now()}
        try:
            rec.update(run_one(_recipe(base, algos, EPOCHS), bundle, compile_reset="torch_compile" in algos))
        except Exception as exc:  # noqa: BLE001 - a failing algorithm is a result, not a crash
            errors[label] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            rec["error"] = errors[label]
            rec["traceback"] = traceback.format_exc(limit=3)
        runs.append(rec)
        msg = rec.get("error") or f"{rec['images_per_s']:8.1f} img/s, wait {rec['data_wait_fraction']:.3f}"
        print(f"  [{i + 1}/{len(seq)}] repeat {r} {label:>26}: {msg}", flush=True)
    return {"name": NAME, "quick": quick, "repeats": repeats, "epochs_per_run": EPOCHS,
            "load_during_runs": summarize(m["load"][0] for m in runs if m.get("load")),
            "base_recipe": str(BASE_RECIPE.relative_to(ROOT)), "environment": env,
            "runs": runs, "rows": _rows(runs, labels, errors), "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z")}


def _rows(runs: list[dict[str, Any]], labels: list[str], errors: dict[str, str]) -> list[dict[str, Any]]:
    ok = [m for m in runs if "error" not in m]
    base_pos = [(k, m["images_per_s"]) for k, m in enumerate(ok) if m["arm"] == "baseline"]

    def reference(k: int) -> float:
        before = [v for j, v in base_pos if j < k]
        after = [v for j, v in base_pos if j > k]
        around = ([before[-1]] if before else []) + ([after[0]] if after else [])
        return float(np.mean(around))

    base_cpu = [(k, m["images_per_cpu_s"]) for k, m in enumerate(ok) if m["arm"] == "baseline"]
    base_eval = [(k, m["eval_seconds"]) for k, m in enumerate(ok) if m["arm"] == "baseline"]

    def reference_eval(k: int) -> float:
        before = [v for j, v in base_eval if j < k]
        after = [v for j, v in base_eval if j > k]
        return float(np.mean(([before[-1]] if before else []) + ([after[0]] if after else [])))

    def reference_cpu(k: int) -> float:
        before = [v for j, v in base_cpu if j < k]
        after = [v for j, v in base_cpu if j > k]
        return float(np.mean(([before[-1]] if before else []) + ([after[0]] if after else [])))

    rows = [{"arm": "baseline", "images_per_s": summarize(v for _, v in base_pos), "relative": None,
             "images_per_cpu_s": summarize(v for _, v in base_cpu), "relative_cpu": None,
             "data_wait_fraction": summarize(m["data_wait_fraction"] for m in ok if m["arm"] == "baseline"),
             "accuracy": summarize(m["accuracy"] for m in ok if m["arm"] == "baseline"), "error": None,
             "eval_seconds": summarize(v for _, v in base_eval), "eval_relative": None}]
    for label in labels:
        mine = [(k, m) for k, m in enumerate(ok) if m["arm"] == label]
        row: dict[str, Any] = {
            "arm": label, "error": errors.get(label),
            "images_per_s": summarize(m["images_per_s"] for _, m in mine),
            "relative": summarize(m["images_per_s"] / reference(k) for k, m in mine),
            "images_per_cpu_s": summarize(m["images_per_cpu_s"] for _, m in mine),
            "relative_cpu": summarize(m["images_per_cpu_s"] / reference_cpu(k) for k, m in mine),
            "data_wait_fraction": summarize(m["data_wait_fraction"] for _, m in mine),
            "accuracy": summarize(m["accuracy"] for _, m in mine),
            "eval_seconds": summarize(m["eval_seconds"] for _, m in mine),
            "eval_relative": summarize(m["eval_seconds"] / reference_eval(k) for k, m in mine),
        }
        whitening = [m["whitening_seconds"] for _, m in mine if m.get("whitening_seconds") is not None]
        if whitening:
            row["whitening_seconds"] = summarize(whitening)
        if label.startswith("torch_compile") and mine:
            steady, compile_s = [], []
            for _, m in mine:
                ep = m["epoch_seconds"]
                if len(ep) >= 2:
                    per_epoch = m["samples"] / len(ep)
                    steady.append(per_epoch * (len(ep) - 1) / sum(ep[1:]))
                    compile_s.append(ep[0] - float(np.median(ep[1:])))
            row["steady_images_per_s"] = summarize(steady)
            row["steady_relative"] = summarize(s / reference(k) for s, (k, _) in zip(steady, mine))
            row["compile_seconds"] = summarize(compile_s)
        rows.append(row)
    return rows


def _key(r: dict[str, Any]) -> str:
    return "relative_cpu" if r.get("relative_cpu") and r["relative_cpu"]["n"] else "relative"


def plot(result: dict[str, Any]) -> str | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in result["rows"] if r["relative"] and r["relative"]["n"]]
    if not rows:
        return None
    rows.sort(key=lambda r: r[_key(r)]["median"])
    fig, ax = plt.subplots(figsize=(6.5, 0.28 * len(rows) + 1.4))
    y = np.arange(len(rows))
    for field, off, color, label in (("relative_cpu", -0.2, "tab:blue", "per CPU-second"),
                                     ("relative", 0.2, "tab:orange", "per wall-clock second")):
        have = [r.get(field) and r[field]["n"] for r in rows]
        if not any(have):
            continue
        med = np.array([r[field]["median"] if h else np.nan for r, h in zip(rows, have)])
        lo = np.array([r[field]["median"] - r[field]["min"] if h else 0 for r, h in zip(rows, have)])
        hi = np.array([r[field]["max"] - r[field]["median"] if h else 0 for r, h in zip(rows, have)])
        ax.barh(y + off, med, height=0.4, xerr=[lo, hi], color=color, alpha=0.7, error_kw={"lw": 0.6}, label=label)
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_yticks(y, [r["arm"] for r in rows], fontsize=8)
    ax.set_xlabel("images/s relative to the baseline (median, min–max bars; log)")
    ax.set_title(f"digits/resnet8, {result['epochs_per_run']} epochs per run, {result['repeats']} repeats", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, NAME)


def render(result: dict[str, Any], figure: bool = True) -> str:
    """The section's markdown; ``figure=False`` leaves reports/bench/<name>.png as it is (--only runs)."""
    rows = []
    ordered = [result["rows"][0]] + sorted(
        result["rows"][1:], key=lambda r: -(r[_key(r)]["median"] if r[_key(r)] and r[_key(r)]["n"] else -1))
    for r in ordered:
        base = r["arm"] == "baseline"
        note = r["error"] or ""
        if r.get("compile_seconds") and r["compile_seconds"]["n"]:
            note = (f"steady state (after epoch 1, wall): {fmt_summary(r['steady_relative'], '.2f', 'range')}x "
                    f"baseline; compile ≈ {fmt_summary(r['compile_seconds'], '.1f', 'range')} s inside train_seconds "
                    "(first epoch minus a steady one; Inductor's on-disk cache may have been warm from earlier runs)")
        if r.get("whitening_seconds") and r["whitening_seconds"]["n"]:
            note = f"patch-covariance estimate {fmt_summary(r['whitening_seconds'], '.3f', 'range')} s, inside train_seconds"
        rows.append([r["arm"], r["images_per_s"]["n"],
                     fmt_summary(r.get("images_per_cpu_s", {}), ".0f", "range"),
                     "1 (reference)" if base else fmt_summary(r.get("relative_cpu") or {}, ".2f", "range"),
                     fmt_summary(r["images_per_s"], ".0f", "range"),
                     "1 (reference)" if base else fmt_summary(r["relative"], ".2f", "range"),
                     fmt_summary(r["data_wait_fraction"], ".3f", "range"), fmt_summary(r["accuracy"], ".3f", "range"),
                     "1 (reference)" if base else fmt_summary(r.get("eval_relative") or {}, ".2f", "range"),
                     note])
    img = plot(result) if figure else None
    load = result.get("load_during_runs")
    parts = [
        "**What**: images/s of each registered algorithm switched on alone (literature defaults; RandAugment "
        "at depth 1/2/3) relative to the plain baseline, and its data-wait fraction (share of train_seconds "
        "spent producing the batch, AFTER_DATALOADER hooks included), and the time of the test-split "
        "evaluation after training relative to the baseline's (outside train_seconds: where flip TTA's cost shows).",
        f"**How**: base recipe `{result['base_recipe']}` (resnet8, batch 64, 2 threads, CPU), budget cut to "
        f"{result['epochs_per_run']} epochs per run so progress-scheduled methods run their whole (dilated) "
        f"schedule. Arms in rotated order per repeat, a baseline run after every {BASELINE_EVERY} arms; each "
        "ratio divides by the mean of the two baseline runs around it. Throughput per wall-clock second "
        "(what a user gets) and per CPU-second of the process (`time.process_time` over the training steps: "
        "far less sensitive to other processes on a shared machine; rows are sorted by it). Cells: median "
        f"[min–max] over repeats; {result['repeats']} repeats{' (--quick)' if result['quick'] else ''}, "
        "torch_compile once (after `torch._dynamo.reset()`, inductor compiling in-process). Accuracy after so "
        "few epochs is only a sanity check, not a quality measure. No goal: this is a cost table."
        + (f" 1-minute load average during the runs: {fmt_summary(load, '.1f', 'range')} on 2 cores." if load else ""),
        "",
        md_table(["arm", "runs", "img/CPU-s", "relative (CPU time)", "img/s (wall)", "relative (wall)",
                  "data-wait fraction", "test acc (short run)", "eval time (relative)", "note"], rows),
    ]
    if img:
        parts += ["", f"![relative throughput per algorithm]({img})"]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeats", type=int)
    p.add_argument("--only", help="comma-separated algorithm names (debugging)")
    a = p.parse_args(argv)
    from bench.common import save_result

    res = run(a.quick, a.repeats, a.only.split(",") if a.only else None)
    if not a.only:
        save_result(NAME, res)
    print(render(res, figure=not a.only))


if __name__ == "__main__":
    main()
