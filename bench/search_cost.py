"""What a search costs to its first claim at the target: the digits plan before and after the levers, side by side.

Each arm is a real search of ``search_spaces/digits.yaml`` (``make demo``'s), or of the space it names, on the local
Ray, the arms one after the other, with the changes below; what it spent comes from its run.json ``payback`` (trainings of its
own baseline at budget 1, by stage) and its verdict from its headline at the default target (the baseline at
budget 1):

- ``before``: the demo's plan before these levers: budgets 0.25-2, ``confirm.paired_baseline: full`` (the baseline
  re-run at every budget with the confirmation's 3 seeds beside the candidates), fixed 3 confirmation seeds for up
  to 5 candidates within 55 % of the compute, no search budget;
- ``before, with the probe``: the same with ``paired_baseline: probe`` (one baseline run re-timed beside the
  candidates; the rest only if the machine's speed moved; claims measured against the baseline stage's 3 seeds);
- ``shipped``: the space as shipped now: the probe, no budget 2 (the default target, the baseline at budget 1,
  needs no run past it, and a budget-2 run costs two trainings), ``confirm: {top_k: 3, sequential: true}`` (a 4th
  seed only for a candidate still undecided) and ``search_budget: 30``;
- ``shipped with the LR sweep and no stop``: the same with ``baseline.tune_lr: true`` (0.5x / 1x / 2x of the
  base's LR at budget 1 before the baseline) and ``confirm.stop_at_claim: false``, the digits plan of the session
  before (an early candidate still open gets its second look at once in both);
- ``shipped seed 1`` / ``seed 2``: the shipped digits plan again with another seed for the trials and the sampler
  (another draw of the whole search: baseline seeds, proposals, confirmation seeds);
- ``fashion_mnist_quick``: ``search_spaces/fashion_mnist_quick.yaml`` as shipped, the same plan on a quarter of
  Fashion-MNIST's training images (6k validation images: far less noise at the target than digits' 216);
- ``fashion_mnist_quick confirmed after the proposals``: the same with ``confirm: {early: null, stop_at_claim:
  false}``, the plan before early confirmation and the stop at the first claim (a candidate's curve is still cut
  at the budget that reached the target);
- ``fashion_mnist_quick seed 1``: the same with another seed for the trials and the sampler;
- ``byo``: ``examples/byo/space.yaml`` as shipped, a user's own ConvMixer, loader and method on a tenth of
  Fashion-MNIST, on the same plan (budgets 0.25-1, ``search_budget: 20``, early confirmation and the stop).
- ``... with 3 baseline seeds at every budget``: the arm before ``baseline.seeds_elsewhere: 1`` (the baseline trains
  3 seeds at budgets 0.5 and 1, where the target is read and interpolated, and one at 0.25, which only draws its
  curve and anchors recipe curves' bootstrap), run right before its pair (rows dropped on 2026-12-01: the note keeps
  their numbers).
- ``..., before the two-budget first look`` (rows dropped on 2026-12-01, numbers in the note; commit 12016ed, from a
  worktree of it, each arm right before its pair on this tree): a candidate's first look at every budget (at every
  budget up to its own for one whose run reached the target); now two budgets, its own and the one below or above
  (engine/confirm.py ``curve_runs``), and a second look a budget up only where a seed fell short of the target at
  the top one.
- ``..., before the partial second look`` (rows dropped, numbers in the note; commit c3e57ba, from a worktree of it,
  each arm right before its pair): a second look that the search budget could not hold whole was skipped for every
  candidate; now the undecided candidates get theirs in the plan's order while they fit (engine/confirm_stage.py
  ``look_again``).
- ``..., before the hold`` (commit d75aeb4, from a worktree of it, each arm right before its pair): with
  ``stop_at_claim`` proposals went on beside the runs of a claim pending; now none starts while one is
  (engine/loop.py ``_next``: such a proposal is trained for nothing once the claim stands).
- ``..., before the next budget for replicates short`` (commit 8c43abc, the hold, from a worktree of it, each arm
  beside its pair; ``..., with the next budget for all replicates short``: commit 0b28b97, which sent every such
  curve up): a curve open at its first look with every seed past the target at its top budget got a 4th seed;
  now one with more of its bootstrap replicates short of the target than a claim may miss, more than a 4th seed at
  its mean and spread would mend, gets the next budget (``analysis.sequential.next_budget_needed``), as one with a
  seed short of it did.
- *The early look ahead of the baseline* (retired, no rows: measured, then reverted; commits 8d484e7 and be583bf
  have it): ``confirm.early`` also began a proposal short of the target that ran 1.5x ahead of the baseline's
  curve in its last step below it. Side by side with commit 2e999f6 it won where such a run was the best there was
  (digits seed 1: none in 29.6 -> 13.1) and lost where it went in ahead of a run that reached the target
  moments later (Fashion-MNIST quick seed 0: 8.5 -> 10.7, and 9.2 -> 11.3 when taken only while no candidate was
  begun: its runs were queued first); see the note.
- ``... with the shipped prior`` (retired: measured, then removed with the lever, commit 3796f32; rows dropped,
  numbers in the note): the arm above it with ``warm_start: shipped``, up to 3 confirmed recipes of the example
  searches on *other* data (digits got Fashion-MNIST's, Fashion-MNIST digits') proposed right after the baseline,
  each arm run beside its pair without.

*Cost to the first confirmed claim*: what the search had spent when its headline first stood confirmed at the
target, replayed from its trials in the order they finished (``recipesearch.analysis.first_claim``), else "none";
arms saved before that replay give the whole search's cost (marked <=).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from bench.common import ROOT, environment, load_result, save_result

NAME = "search_cost"
TITLE = "Search cost to the first confirmed claim at the target: the levers on digits, Fashion-MNIST and a user's model"
SPACE = ROOT / "search_spaces" / "digits.yaml"
FM_QUICK = ROOT / "search_spaces" / "fashion_mnist_quick.yaml"
BYO = ROOT / "examples" / "byo" / "space.yaml"
BEFORE = {"budgets": [0.25, 0.5, 1, 2], "search_budget": None,
          "confirm": {"top_k": 5, "seeds": 3, "max_share": 0.55, "paired_baseline": "full"}}
ARMS = {"before": BEFORE,
        "before, with the probe": {**BEFORE, "confirm": {**BEFORE["confirm"], "paired_baseline": "probe"}},
        "shipped": {},
        "shipped with the LR sweep and no stop": {"baseline": {"seeds": 3, "tune_lr": True}, "confirm": {
            **yaml.safe_load(SPACE.read_text())["confirm"], "stop_at_claim": False}},
        **{f"shipped seed {k}": {"seed": k, "sampler": {"name": "tpe", "seed": k, "n_startup_trials": 8}}
           for k in (1, 2)},
        "fashion_mnist_quick": {"space": FM_QUICK},
        "fashion_mnist_quick seed 1": {"space": FM_QUICK, "seed": 1,
                                       "sampler": {"name": "tpe", "seed": 1, "n_startup_trials": 8}},
        "fashion_mnist_quick confirmed after the proposals": {
            "space": FM_QUICK, "confirm": {**yaml.safe_load(FM_QUICK.read_text())["confirm"], "early": None,
                                           "stop_at_claim": False}},
        "byo": {"space": BYO}}
# the arms above before ``baseline.seeds_elsewhere: 1`` (3 seeds at budget 0.25 too), each run right before its pair
SEEDS_EVERYWHERE = {"baseline": {"seeds": 3, "tune_lr": False}}
ARMS.update({f"{name} with 3 baseline seeds at every budget": {**ARMS[name], **SEEDS_EVERYWHERE}
             for name in ("shipped", "shipped seed 1", "shipped seed 2", "fashion_mnist_quick",
                          "fashion_mnist_quick seed 1", "byo")})


def _space(changes: dict[str, Any], folder: Path) -> Path:
    """The arm's space file in ``folder``: its ``space`` (digits.yaml by default) with its changes; the source file
    itself when there are none (a user's code beside it is found from its folder)."""
    changes = dict(changes)
    source = Path(changes.pop("space", SPACE))
    if not changes:
        return source
    data = yaml.safe_load(source.read_text())
    data.update(changes)
    data = {k: v for k, v in data.items() if v is not None}  # None: the key left out
    if isinstance(data["base"], str):
        data["base"] = str(source.parent / data["base"])
    path = folder / "space.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def run(quick: bool = False, out: str = "runs/search_cost", only: list[str] | None = None) -> dict[str, Any]:
    """Each arm's search (``only``: those arms, in that order, so a pair runs side by side; the others' saved
    results kept)."""
    import recipesearch
    from recipesearch.analysis import Objectives
    from recipesearch.analysis.first_claim import first_claim

    env = environment()
    before = (load_result(NAME) or {}) if only else {}
    saved = {a["arm"]: a for a in before.get("arms", [])}
    for name in only or list(ARMS):
        changes = ARMS[name]
        folder = Path(out) / name.replace(" ", "_").replace(",", "").replace("<=", "le")
        folder.mkdir(parents=True, exist_ok=True)
        space = _space({**changes, **({"trials": 20} if quick else {})}, folder)
        started = time.time()
        result = recipesearch.search(space, out=folder / "run", force=True, quiet=True)
        meta = json.loads((folder / "run" / "run.json").read_text())
        rows = pd.read_csv(folder / "run" / "trials.csv")
        paired = int((rows["stage"].eq("confirm") & rows["is_baseline"].astype(bool)).sum())
        h = result.headline
        claim = first_claim(rows, Objectives.from_run_meta(meta))
        saved[name] = {"arm": name, "changes": {k: str(v) if k == "space" else v for k, v in changes.items()},
                       "wall_seconds": time.time() - started, "ran": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                       "trials": len(result.trials), "payback": meta.get("payback"), "verdict": h.verdict,
                       "confirmed": bool(h.confirmed), "speedup": h.speedup if h.confirmed else None,
                       "ci": [h.speedup_ci_low, h.speedup_ci_high] if h.confirmed else None,
                       "target": h.baseline_accuracy, "elsewhere": h.elsewhere,
                       "first_look": (meta.get("confirmation") or {}).get("first_look"), "paired_runs": paired,
                       "first_claim": {"trainings": claim.trainings, "run": claim.number, "verdict": claim.verdict}
                       if claim else None}
    kept = {"note": before["note"]} if before.get("note") else {}  # the saved reading, to be revised by hand
    # in ARMS' order; a retired arm's saved row (its lever measured and removed) stays, last
    arms = [saved[name] for name in ARMS if name in saved] + [a for n, a in saved.items() if n not in ARMS]
    return {"environment": env, "quick": quick, "arms": arms, "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            **kept}


def render(result: dict[str, Any]) -> str:
    lines = [__doc__.split("\n\n", 1)[1].strip(), "",
             "| arm | trials | paired baseline runs | trainings (baseline at budget 1) | by stage | verdict at the target "
             "| cost to the first confirmed claim | pays for itself after |", "|---|---|---|---|---|---|---|---|"]
    words = {"tune": "sweep", "baseline": "baseline", "search": "proposals", "confirm": "confirmation"}
    for a in result["arms"]:
        p = a["payback"] or {}
        stages = ", ".join(f"{words.get(k, k)} {v['trainings']:.1f}" for k, v in (p.get("by_stage") or {}).items()
                           if v.get("trainings") is not None)
        verdict = (f"confirmed {a['speedup']:.2f}x [{a['ci'][0]:.2f}-{a['ci'][1]:.2f}]" if a["confirmed"]
                   else a["verdict"].split(":")[0])
        claim = a.get("first_claim")
        cost = f"{claim['trainings']:.1f}" if claim else "none" if "first_claim" in a or not a["confirmed"] \
            else f"<= {p['search_trainings']:.1f}"
        even = f"{p['break_even_trainings']:.0f} trainings" if p.get("break_even_trainings") else "-"
        lines.append(f"| {a['arm']} | {a['trials']} | {a.get('paired_runs', '-')} | "
                     f"{p.get('search_trainings', float('nan')):.1f} | {stages} | "
                     f"{verdict} (target {a['target']:.4f}) | {cost} | {even} |")
    lines += ["", "Verdicts in full:", ""] + [f"- {a['arm']}: {a['verdict']}; {a['elsewhere']}" for a in result["arms"]]
    if result.get("note"):
        lines += ["", f"Note: {result['note']}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.search_cost", description=TITLE)
    p.add_argument("--quick", action="store_true", help="20 trials a search instead of 40")
    p.add_argument("--out", default="runs/search_cost")
    p.add_argument("--arms", help=f"comma-separated subset of: {', '.join(ARMS)} (the others' saved results kept)")
    args = p.parse_args(argv)
    only = [a.strip() for a in args.arms.split(",")] if args.arms else None
    if only and set(only) - set(ARMS):
        p.error(f"--arms: unknown {', '.join(sorted(set(only) - set(ARMS)))} (arms: {', '.join(ARMS)})")
    result = run(quick=args.quick, out=args.out, only=only)
    save_result(NAME, result)
    print(render(result))


if __name__ == "__main__":
    main()
