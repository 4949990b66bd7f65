"""§5's section of reports/benchmarks.md and its figure, from the saved recipe_speedup results.

The runs are analysed again here (``recipe_speedup_analysis.analyse``), so a re-render applies the current
rules to saved results.
"""
from __future__ import annotations

from typing import Any

from bench.common import fmt, fmt_summary, goal_text, md_table, save_figure
from bench.recipe_speedup_analysis import GOAL_SPEEDUP, analyse


def plot(result: dict[str, Any]) -> str | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from recipesearch.analysis import baseline_envelope

    a = result["analysis"]
    runs = result["runs"]
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    base = [r for r in runs if r["baseline"]]
    ax.scatter([r["train_seconds"] for r in base], [r["accuracy"] for r in base], s=12, color="gray", alpha=0.6,
               label="baseline runs (each seed)")
    env = baseline_envelope([a["medians"][b]["train_seconds"] for b in a["baseline_arms"]],
                            [a["medians"][b]["accuracy"] for b in a["baseline_arms"]])
    ax.plot(env.times, env.accuracies, "k-", lw=1.2, label="baseline envelope (medians)")
    for c in a["rows"]:
        pts = [r for r in runs if r["arm"] == c]
        (sc,) = ax.plot([r["train_seconds"] for r in pts], [r["accuracy"] for r in pts], "o", ms=4, alpha=0.5)
        m = a["medians"][c]
        ax.plot([m["train_seconds"]], [m["accuracy"]], "*", ms=12, color=sc.get_color(), label=c[:60])
    for name, labels in (result.get("curves") or {}).items():
        pts = sorted((a["medians"][c]["train_seconds"], a["medians"][c]["accuracy"]) for c in labels)
        ax.plot(*zip(*pts), "--", lw=1, color="tab:red", label=f"{name.split(':')[0]}'s recipe, its budgets (medians)")
    ax.set_xscale("log")
    ax.set_xlabel("train_seconds (log)")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"{result['dataset']}: baseline curve vs recipes ({result['seeds']} seeds, {result['threads']} threads)",
                 fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, result["name"])


def _base_text(result: dict[str, Any]) -> str:
    text = result["base_recipe"]
    if not text.startswith(("`", "the ")):  # results saved before the baseline could come from a search
        text = f"`{text}`"
    epochs = result.get("baseline_epochs")
    return text + (f"; epochs per budget: {', '.join(f'{b}: {e:g}' for b, e in epochs.items())}" if epochs else "")


def _final_goal_text(a: dict[str, Any]) -> str:
    if not a.get("curves"):
        return ""
    return (f" At the longest baseline's own accuracy (the stricter reading: the recipe's curve against the "
            f"baseline's, table below): {goal_text(a['goal_met_at_final_accuracy'])} "
            f"(best {fmt(a['best_speedup_at_final_accuracy'], '.2f')}x on medians).")


def render_section(result: dict[str, Any]) -> str:
    # analysed again from the raw runs, so a re-render applies the current rules to saved results
    a = result["analysis"] = analyse(result["runs"], list(result["candidates"]), result["seeds"],
                                     result.get("curves"))
    brows = [[b, fmt_summary(a["medians"][b]["train_seconds_s"], ".1f", "range"),
              fmt_summary(a["medians"][b]["accuracy_s"], ".4f", "range")] for b in a["baseline_arms"]]
    crows = []
    for c, r in a["rows"].items():
        m = a["medians"][c]
        crows.append([c, fmt_summary(m["train_seconds_s"], ".1f", "range"), fmt_summary(m["accuracy_s"], ".4f", "range"),
                      f"{fmt(r['speedup_on_medians'], '.2f')} ({r['status_on_medians']})",
                      fmt_summary(r["speedup_per_seed"], ".2f", "range"),
                      f"{fmt(r['gain_on_medians'] * 100, '+.2f')} pp ({r['gain_status_on_medians']})",
                      fmt_summary({k: (v * 100 if k != "n" else v) for k, v in r["gain_per_seed"].items()}, "+.2f", "range")])
    h = a["headline"]
    head = ("no candidate reached the baseline's final accuracy" if h["recipe"] is None else
            f"fastest recipe reaching the longest baseline's accuracy ({h['target_accuracy']:.4f}): {h['recipe']}, "
            f"{h['recipe_time']:.1f} s vs the baseline's {h['baseline_time']:.1f} s → **{h['speedup']:.2f}x** "
            f"(per seed: {fmt_summary(h['per_seed'], '.2f', 'range')})")
    img = plot(result)
    parts = [
        f"**What**: on {result['dataset']}, the baseline ({_base_text(result)}) at budgets "
        f"{', '.join(f'{b:g}' for b in result['budgets'])} (its tradeoff curve) against the "
        f"{result['candidate_source']}, retrained side by side: speedup at the baseline's accuracy and "
        "accuracy gained at the baseline's time (`recipesearch.analysis`: baseline_envelope, "
        "speedup_at_matched_accuracy, accuracy_at_matched_time; accuracy interpolated linearly in log time; "
        "a `below_baseline` speedup is an upper bound, against the shortest baseline run, and does not count "
        "toward the goal; `beyond_baseline` ones are not extrapolated).",
        f"**How**: {result['seeds']} seeds per arm, arms in rotated order per seed, one run at a time with "
        f"{result['threads']} threads{' (--quick: digits instead of Fashion-MNIST)' if result['quick'] else ''}"
        f"{f', every arm at {p} (--precision)' if (p := result.get('precision')) else ''}"
        f"{f', the baseline at {p} (--baseline-precision)' if (p := result.get('baseline_precision')) else ''}. "
        "Speedups per seed use that seed's baseline curve; 'on medians' uses per-arm medians.",
        f"**Goal**: speedup ≥ {GOAL_SPEEDUP:g}x at the baseline's accuracy (best candidate, on medians): "
        f"{goal_text(a['goal_met'])} (best interpolated {fmt(a['best_speedup_on_medians'], '.2f')}x). "
        f"Headline: {head}.{_final_goal_text(a)}",
        "",
        md_table(["baseline", "train s", "accuracy"], brows),
        "",
        md_table(["recipe", "train s", "accuracy", "speedup on medians (status)", "speedup per seed",
                  "accuracy gain at matched time on medians", "gain per seed (pp)"], crows),
    ]
    if a.get("curves"):
        parts += ["", "The search's best recipe as a tradeoff curve (the budgets the search trained it at, then the "
                  "baseline's longer budgets; `confirmed_candidates`, `longer_budget_arms`): speedup at the longest baseline's accuracy, time to reach it read "
                  "off each envelope in log time (`speedup_at_final_accuracy`; `at_first`: the recipe's cheapest point already "
                  "beats it, a lower bound; `not reached`: no extrapolation).", "",
                  md_table(["recipe curve", "points", "target accuracy (median)", "baseline s to reach it",
                            "recipe s to reach it", "speedup on medians (status)", "speedup per seed (statuses)"],
                           [[name, str(len(r["arms"])), f"{r['target_accuracy']:.4f}", fmt(r["baseline_time"], ".1f"),
                             fmt(r["recipe_time"], ".1f"), f"{fmt(r['speedup'], '.2f')}x ({r['status']})",
                             f"{fmt_summary(r['speedup_per_seed'], '.2f', 'range')} ({', '.join(r['statuses'])})"]
                            for name, r in a["curves"].items()])]
    if img:
        parts += ["", f"![tradeoff curve]({img})"]
    return "\n".join(parts)
