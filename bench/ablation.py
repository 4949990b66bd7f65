"""Ablation of the best recipe: what each of its methods buys and what it costs (Amdahl, not addition).

Method
1) The recipe: the confirmed curve with the largest speedup in the newest Fashion-MNIST search run (as in
   §5, ``recipe_speedup.confirmed_candidates``; for a search that confirmed none at its target, §5's curve:
   the front's largest measured speedup, ``longer_budget_arms``), at one budget (``BUDGET``: the recipe's
   2-epoch point).
2) Arms: the whole recipe, and the recipe without each of its methods in turn (an algorithm dropped; for
   ``muon``, the base recipe's optimizer and its hyperparameters instead). Each arm is trained with
   ``SEEDS`` fresh seeds (recipe seed + 2000 + k), arms in rotated order per seed, one run at a time with 2
   threads: the conditions of §5.
3) Per arm: median test accuracy and train_seconds over seeds; the change from the whole recipe (pp, time
   ratio); and the speedup at matched accuracy against the baseline curve of §5 (its per-arm medians, same
   machine and threads), so each method's share of the speedup reads as whole / without.
What each method removes (Amdahl): a method can cut time per step (channels_last, progressive resizing,
layer freezing), buy accuracy per step so fewer steps reach the target (Muon, patch whitening, Lookahead,
EMA, label smoothing, BCE), or cost time for accuracy (SAM's extra pass, BlurPool's filters); flip-TTA costs
evaluation time only (eval_seconds, outside train_seconds). The table shows which of these carry the speedup.
Full: 2 seeds (~15 minutes on 2 idle cores). --quick: 1 seed.
"""
from __future__ import annotations

import argparse
import math
import time
from typing import Any

import numpy as np

from bench.common import environment, fit_or_nan, fmt, load_now, load_result, md_table

NAME = "ablation"
TITLE = "Ablation of the best Fashion-MNIST recipe: what each method buys and costs"
BUDGET = 1.0
SEEDS = 2
SEED_OFFSET = 2000  # fresh seeds, distinct from the search's and from §5's (1000 + k)
THREADS = 2
WHOLE = "whole recipe"
FP32 = "at fp32"  # the arm without mixed precision, when §5 measured at one


def arms_of(recipe: dict[str, Any], base: dict[str, Any], precision: str | None = None) -> dict[str, dict[str, Any]]:
    """{label: recipe dict}: the whole recipe, then without each method (Muon: the base's optimizer); at
    ``precision`` (§5's, when it set one), and at fp32 too when that is mixed precision."""
    if precision:
        recipe = {**recipe, "precision": precision}
    arms = {WHOLE: recipe}
    for name in sorted(recipe.get("algorithms") or {}):
        arms[f"without {name}"] = {**recipe, "algorithms": {k: v for k, v in recipe["algorithms"].items() if k != name}}
    if recipe.get("optimizer", {}).get("name") != base.get("optimizer", {}).get("name"):
        arms[f"without {recipe['optimizer']['name']}"] = {**recipe, "optimizer": base["optimizer"]}
    if precision and precision != "fp32":
        arms[FP32] = {**recipe, "precision": "fp32"}
    return arms


def fashion_frontier_recipe() -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(label, recipe at BUDGET, base recipe) from the newest Fashion-MNIST search's confirmed frontier."""
    from bench.recipe_speedup_candidates import (
        confirmed_candidates,
        find_search_run,
        longer_budget_arms,
        plain_baseline_curve,
        search_baselines,
        search_objectives,
    )

    found = find_search_run("fashion_mnist")
    if found is None:
        raise RuntimeError("no Fashion-MNIST search run (runs/**/trials.csv or reports/examples/*/trials.csv)")
    objectives = search_objectives(found[0])
    # the plain baseline, also for a search that refines another's recipe; else the search's own
    _, curve = plain_baseline_curve(found, "fashion_mnist", 10)
    curve = curve or search_baselines(found[1], 10, objectives)
    cands, curves = confirmed_candidates(found[0], found[1], sorted(curve), objectives)
    if curves:
        name, labels = next(iter(curves.items()))
        recipe = dict(cands)[labels[0]]
    else:  # a search that confirmed nothing at its target: §5's curve, its front's largest measured speedup
        longer = longer_budget_arms(found[1], sorted(curve), objectives)
        if not longer:
            raise RuntimeError(f"{found[0]} has no recipe on its front")
        name, recipe = longer[0]
    return name, {**recipe, "budget": BUDGET}, next(iter(curve.values()))


def run(quick: bool = False, seeds: int | None = None) -> dict[str, Any]:
    import torch

    torch.set_num_threads(THREADS)
    n_seeds = seeds or (1 if quick else SEEDS)
    env = environment()  # at the start: its load average and start time are the run's, not its end's
    name, recipe, base = fashion_frontier_recipe()
    precision = (load_result("recipe_speedup") or {}).get("precision")  # §5's conditions: its baseline's too
    arms = arms_of(recipe, base, precision)
    labels = list(arms)
    print(f"[{NAME}] {len(labels)} arms x {n_seeds} seeds: {name} @ budget {BUDGET:g}", flush=True)
    runs = []
    for s in range(n_seeds):
        for label in labels[s % len(labels):] + labels[:s % len(labels)]:
            fresh = int(arms[label].get("seed", 0)) + SEED_OFFSET + s
            data = {**arms[label], "seed": fresh, "threads": THREADS, "device": "cpu"}
            rec: dict[str, Any] = {"seed": s, "recipe_seed": fresh, "arm": label, "load": load_now()}
            rec.update(fit_or_nan(data, f"bench:{NAME}"))
            runs.append(rec)
            print(f"  seed {s} {label}: acc {rec['accuracy']:.4f} in {rec['train_seconds']:.1f} s", flush=True)
    return {"name": NAME, "quick": quick, "recipe": name, "budget": BUDGET, "seeds": n_seeds, "threads": THREADS,
            "precision": precision,
            "arms": arms, "runs": runs, "environment": env,
            "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z")}


def _baseline_curve() -> tuple[list[float], list[float], str]:
    """(times, accuracies) of §5's baseline arms (per-arm medians), and when they were measured."""
    sp = load_result("recipe_speedup")
    if not sp:
        return [], [], ""
    med = sp["analysis"]["medians"]
    arms = sp["analysis"]["baseline_arms"]
    return ([med[a]["train_seconds"] for a in arms], [med[a]["accuracy"] for a in arms], sp.get("finished", "?"))


def analyse(result: dict[str, Any]) -> dict[str, Any]:
    from recipesearch.analysis import speedup_at_matched_accuracy

    bt, ba, when = _baseline_curve()
    rows: dict[str, dict[str, Any]] = {}
    for label in result["arms"]:
        mine = [r for r in result["runs"] if r["arm"] == label]
        acc = float(np.nanmedian([r["accuracy"] for r in mine])) if mine else math.nan
        secs = float(np.nanmedian([r["train_seconds"] for r in mine])) if mine else math.nan
        evals = [r.get("eval_seconds") for r in mine if r.get("eval_seconds") is not None]
        sp = speedup_at_matched_accuracy(secs, acc, bt, ba) if bt else None
        rows[label] = {"accuracy": acc, "train_seconds": secs, "eval_seconds": float(np.median(evals)) if evals
                       else math.nan, "speedup": sp.speedup if sp else math.nan,
                       "status": sp.status if sp else "no baseline curve"}
    whole = rows[WHOLE]
    for r in rows.values():
        r["acc_change_pp"] = (r["accuracy"] - whole["accuracy"]) * 100
        r["time_ratio"] = r["train_seconds"] / whole["train_seconds"] if whole["train_seconds"] else math.nan
        r["share"] = whole["speedup"] / r["speedup"] if r["speedup"] and math.isfinite(r["speedup"]) else math.nan
    return {"rows": rows, "baseline_measured": when}


ROLE = {
    "channels_last": "time per step", "progressive_resizing": "time per step", "layer_freezing": "time per step",
    "muon": "accuracy per step", "patch_whitening": "accuracy per step", "lookahead": "accuracy per step",
    "ema": "accuracy per step", "label_smoothing": "accuracy per step", "bce_loss": "accuracy per step",
    "sam": "costs time for accuracy", "blurpool": "costs time for accuracy", "mixup": "accuracy per step",
    "cutout": "accuracy per step", "colout": "time per step", "flip_tta": "evaluation only",
    # the main model's backward pass on part of each batch, for a small proxy's forward and backward on all of it
    "proxy_selection": "time per step", "brightness_contrast": "accuracy per step",
    FP32: "time per step (mixed precision)",
}


def carriers(rows: dict[str, dict[str, Any]], n: int = 4) -> list[tuple[str, float]]:
    """The ``n`` methods that carry the speedup most: (method, share), largest share first (of ``analyse``'s rows)."""
    shares = sorted(((r["share"], label) for label, r in rows.items()
                     if label != WHOLE and math.isfinite(r["share"])), reverse=True)
    return [(label.removeprefix("without "), share) for share, label in shares[:n]]


def render(result: dict[str, Any]) -> str:
    a = analyse(result)
    rows = []
    for label, r in a["rows"].items():
        method = label.removeprefix("without ")
        rows.append([label, ROLE.get(method, "") if label != WHOLE else "",
                     f"{fmt(r['accuracy'], '.4f')} ({fmt(r['acc_change_pp'], '+.2f')} pp)",
                     f"{fmt(r['train_seconds'], '.1f')} (x{fmt(r['time_ratio'], '.2f')})",
                     fmt(r["eval_seconds"], ".2f"), f"{fmt(r['speedup'], '.2f')}x ({r['status']})",
                     fmt(r["share"], ".2f")])
    top = ", ".join(f"{method} (x{share:.2f})" for method, share in carriers(a["rows"]))
    return "\n".join([
        f"**What**: the recipe of §5's headline curve ({result['recipe']}) at budget {result['budget']:g}, whole and "
        "without each of its methods, retrained side by side; the speedup of each arm at matched accuracy against "
        f"§5's baseline curve (per-arm medians, measured {a['baseline_measured']}).",
        f"**How**: {result['seeds']} fresh seed(s) per arm, arms in rotated order, one run at a time with "
        f"{result['threads']} threads{f', every arm at {p} as in §5' if (p := result.get('precision')) else ''}; "
        "medians over seeds; test accuracy. *Share* = the whole recipe's speedup "
        "÷ the speedup without the method: above 1, the method carries part of the speedup; below 1, the recipe "
        "is faster without it (at this budget). Interactions make the shares non-additive (Amdahl): removing "
        "one of two methods that cut the same cost shows little for either.",
        f"**Carry the speedup most**: {top or 'n/a'}.",
        "",
        md_table(["arm", "what the method removes", "test accuracy (change)", "train s (x whole)", "eval s",
                  "speedup vs baseline curve", "share"], rows),
    ])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seeds", type=int)
    args = p.parse_args(argv)
    from bench.common import save_result

    res = run(args.quick, args.seeds)
    save_result(NAME, res)
    print(render(res))


if __name__ == "__main__":
    main()
