"""The report's notes: one line each, printed by ``recipesearch report`` and shown on the page.

What the search did that the numbers alone do not say: the split it selected on, what report/reconcile.py
mended, what stopping trials at rungs saved, repeated proposals, the frontier's warnings and the
simplify stage's verdicts.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from recipesearch.analysis.load import BUSY_RATIO, busy_mask, reference_share
from recipesearch.report.selection import Selection


def report_notes(selection: Selection, trials: pd.DataFrame, run_meta: dict[str, Any],
                 warnings: list[str]) -> list[str]:
    """Every note, in the order they are shown: the selection split (the header states it too; a note as
    well, so the CLI prints it with the others), what report/reconcile.py did, the scheduler's and repeats'
    savings, then ``warnings`` (the frontier's, the recipe files'), then the simplify stage's verdicts."""
    notes = [selection.text, *(str(note) for note in run_meta.get("report_notes") or ())]
    notes += [note for note in (pruning_note(trials), repeats_note(trials), busy_note(trials), early_note(run_meta),
                                paired_note(trials), warm_note(trials, run_meta, selection.metric)) if note]
    notes += warnings
    simplified = simplify_note(run_meta)
    if simplified:
        notes.append(simplified)
    return notes


def warm_note(trials: pd.DataFrame, run_meta: dict[str, Any], metric: str) -> str | None:
    """What the warm start proposed, and how well the earlier search ranked the recipes both trained."""
    from recipesearch.engine.warm_start import proxy_ranking

    warm = run_meta.get("warm_start")
    if not isinstance(warm, dict) or not isinstance(warm.get("recipes"), list):
        return None
    recipes = [r for r in warm["recipes"] if isinstance(r, dict) and isinstance(r.get("params"), dict)]
    text = (f"warm start: {len(recipes)} recipe(s) of {', '.join(map(str, warm.get('runs') or []))} proposed first "
            f"({sum(bool(r.get('confirmed')) for r in recipes)} confirmed there)")
    rank = proxy_ranking(recipes, trials, metric)
    if rank is None:
        return text + "; fewer than 3 trained here at the same budget: no ranking to compare"
    return (text + f"; on the {rank['recipes']} both searches trained at the same budget, the earlier search's "
            f"ranking against this one's: Spearman's rho {rank['rho_accuracy']:.2f} on accuracy, "
            f"{rank['rho_seconds']:.2f} on training time")


def pruning_note(trials: pd.DataFrame) -> str | None:
    """What stopping trials at rungs saved (scheduler: moasha), or None when nothing was stopped.

    A stopped trial trained ``pruned_at`` of its steps: had it gone on, it would have trained about
    ``train_seconds / pruned_at`` (steps cost alike along a run; progressive resizing's cheap early steps make
    this an underestimate, so the saving is a lower bound for those)."""
    pruned = trials[trials["state"].eq("PRUNED") & (trials["pruned_at"] > 0) & (trials["train_seconds"] > 0)]
    if pruned.empty:
        return None
    used = float(pruned["train_seconds"].sum())
    full = float((pruned["train_seconds"] / pruned["pruned_at"]).sum())
    trained = float(trials.loc[trials["state"].isin(["COMPLETE", "FAIL", "PRUNED"]), "train_seconds"].fillna(0).sum())
    saved = full - used
    proposals = int((trials["stage"] == "search").sum())
    rungs = float(trials["rung_seconds"].fillna(0).sum())
    return (f"scheduler: {len(pruned)} of {proposals} proposals stopped at a rung (MO-ASHA); they trained "
            f"{used:.0f} s instead of about {full:.0f} s: ~{saved:.0f} s saved, {saved / (trained + saved):.0%} of "
            f"the training time the search would have spent without stopping them. Rung evaluations took "
            f"{rungs:.0f} s (outside train_seconds).")


def repeats_note(trials: pd.DataFrame) -> str | None:
    """How many proposals repeated a recipe the search had trained or was training (the same params, budget and
    seed: engine/loop.py answers them without training), and the training time that spared; None: none did."""
    if "duplicate_of" not in trials or not trials["duplicate_of"].notna().any():
        return None
    repeats = trials["duplicate_of"].dropna().astype(int)
    # the repeated trials' own training time (a trial missing from the frame, or without a time, adds nothing)
    spared = float(trials.set_index("number")["train_seconds"].reindex(repeats).sum())
    proposals = int((trials["stage"] == "search").sum())
    return (f"repeats: {len(repeats)} of {proposals} proposals asked for a recipe already trained or in training "
            f"(the same parameters, budget and seed, so the same result); they were not trained again (~{spared:.0f} "
            f"s of training spared) and count in the trial budget.")


def simplify_note(meta: dict[str, Any]) -> str | None:
    """What the simplify stage decided (run.json's ``simplify``, engine/simplify.py), or None without one."""
    from recipesearch.analysis.simplify import Removal, verdicts_text

    s = meta.get("simplify")
    if not isinstance(s, dict):
        return None
    if s.get("step") != "pruned":  # nothing to simplify, or a search stopped during the ablation
        return f"simplify: nothing to simplify ({s['reason']})" if s.get("reason") else None
    verdicts = [Removal.from_dict(r) for r in s.get("removals") or [] if isinstance(r, dict)]
    budget = s.get("budget") if isinstance(s.get("budget"), (int, float)) else None
    share = s.get("share_of_train_seconds")
    cost = f" It took {share:.0%} of the search's training time." if isinstance(share, (int, float)) else ""
    return (f"simplify (without each method at one budget, seeds on the selection metric): "
            f"{verdicts_text(s.get('recipe'), budget, verdicts)}.{cost}")


def busy_note(trials: pd.DataFrame) -> str | None:
    """Trials whose training process got far less CPU than the search's median (``analysis.load``): their
    times were measured on a busy machine."""
    if "cpu_share" not in trials or "state" not in trials:
        return None
    done = trials[trials["state"].eq("COMPLETE")]
    busy = done[busy_mask(done["cpu_share"]).to_numpy()]
    if busy.empty:
        return None
    numbers = ", ".join(str(int(n)) for n in busy["number"].head(12)) + (" ..." if len(busy) > 12 else "")
    return (f"timing: {len(busy)} trial(s) ran on a busy machine (cpu_share under {BUSY_RATIO:g}x the search's "
            f"median {reference_share(done['cpu_share']):.2f}): trial(s) {numbers}; their times are slower than "
            "the machine's own (`--strict-timing` runs such trials again)")


def early_note(run_meta: dict[str, Any]) -> str | None:
    """The candidates confirmed while the proposals went on (``confirm.early``), and a stop at the first claim."""
    confirmation = run_meta.get("confirmation")
    early = confirmation.get("early") if isinstance(confirmation, dict) else None
    if not isinstance(early, list) or not early:
        return None
    text = (f"early confirmation: trial(s) {', '.join(map(str, early))} reached the target faster than the baseline "
            "in one run by the margin confirm.early asks, and were confirmed while the proposals went on")
    stopped = confirmation.get("stopped_at_claim")
    if stopped is None:
        return text
    return (f"{text}; the search stopped once trial {stopped}'s claim stood (confirm.stop_at_claim): its headline is "
            "the cheapest confirmed recipe, not necessarily the best one")


def paired_note(trials: pd.DataFrame) -> str | None:
    """Whether speedups are measured against the baseline the confirmation stage re-ran beside the candidates, or
    against the baseline stage's after its probe found the machine's speed unchanged (analysis/paired_baseline)."""
    from recipesearch.analysis.paired_baseline import PROBE_TOLERANCE, covers, geometric_mean, probe_moved

    if "completed" not in trials or "stage" not in trials:
        return None
    base = trials[trials["completed"].astype(bool) & trials["is_baseline"].astype(bool)]
    paired = base[base["stage"].eq("confirm")]
    if paired.empty:
        return None
    early = base[~base["stage"].eq("confirm")]
    if not covers(early, paired):
        probe = paired.sort_values("number").iloc[0]
        same = early.loc[early["budget"].astype(float) == float(probe["budget"]), "train_seconds"].astype(float)
        moved = probe_moved(same.to_numpy(), float(probe["train_seconds"]))
        verdict = ("the machine's speed moved, so the rest of the baseline is re-run beside them" if moved
                   else f"within {PROBE_TOLERANCE:.0%}, so claims are measured against the baseline stage's runs")
        return (f"speed probe: the confirmation re-ran one baseline run (budget {float(probe['budget']):g}) beside the "
                f"candidates: {float(probe['train_seconds']):.3g} s, against {geometric_mean(same):.3g} s (geometric "
                f"mean) in the baseline stage; {verdict}")
    return (f"paired baseline: the confirmation stage re-ran the baseline beside the candidates ({len(paired)} runs, "
            "interleaved with theirs); once it covers every budget, confirmed speedups and the headline are measured "
            "against it, and the baseline stage's curve is drawn dotted for comparison")
