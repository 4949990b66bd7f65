"""search_efficiency's section of reports/benchmarks.md and its figures, from the saved results.
"""
from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from bench.common import (
    fmt,
    fmt_summary,
    md_table,
    save_figure,
    summarize,
)
from bench.search_efficiency.config import (
    BOOTSTRAP,
    CONTROL,
    GOAL_RATIO,
    GRID,
    LONG_ARMS,
    LONG_FACTOR,
    LONG_SUFFIX,
    NAME,
    REAL_ARMS,
    SYNETUNE,
    arm_of,
)


def _real_goal_text(analysis: dict[str, Any]) -> str:
    """The goal read on the real searches: the arm with the least compute to random's final hypervolume."""
    rows = {a: r for a, r in analysis.get("rows", {}).items() if a != "random"}
    finite = [(r["relative_to_random"], a) for a, r in rows.items() if math.isfinite(r.get("relative_to_random", math.inf))]
    if not finite:
        return "**Goal** (real searches): no arm reached random's final hypervolume on its median curve: **not met**."
    ratio, arm = min(finite)
    ci = rows[arm].get("relative_interval_95") or [math.nan, math.nan]
    stopped = {a: r["stopped_per_run"]["median"] for a, r in rows.items() if r.get("stopped_per_run", {}).get("median")}
    random_spent = analysis.get("rows", {}).get("random", {}).get("total_train_seconds", {}).get("median", math.nan)
    spent = {a: r["total_train_seconds"]["median"] / random_spent for a, r in rows.items()
             if r.get("total_train_seconds") and math.isfinite(random_spent) and random_spent > 0}
    return (f"**Goal** (real searches, ≤ {analysis.get('goal_ratio', 0.3):g}× random's compute): "
            f"{'**met**' if ratio <= analysis.get('goal_ratio', 0.3) else '**not met**'}; the best arm is `{arm}` at "
            f"{ratio:.2f}x [95% bootstrap over seeds {fmt(ci[0], '.2f')}–"
            f"{fmt(ci[1], '.2f') if math.isfinite(ci[1]) else 'never'}]"
            + (f"; MO-ASHA arms stopped {', '.join(f'{a} {n:g}' for a, n in stopped.items())} trials per search "
               f"(median) and spent {', '.join(f'{spent[a]:.2f}x' for a in stopped if a in spent)} of random's compute"
               + ("" if any(math.isfinite(rows[a].get("relative_to_random", math.inf)) for a in stopped)
                  else ", without reaching random's final hypervolume")
               if stopped else "") + ".")


def _meeting_arms(rows: dict[str, Any]) -> dict[str, Any]:
    """The replay arms that meet the goal by their median curve (the rule): none, and the goal is not met."""
    return {a: r for a, r in rows.items() if r.get("goal_met")}


def _replay_goal_text(rows: dict[str, Any], best: tuple[str, float] | None) -> str:
    """Met or not by the median curve (the rule), with each meeting arm's bootstrap interval and how many seeds
    reach the target, so a point estimate whose interval reaches above the goal reads as such."""
    head = f"**Goal** (issue 14): an arm reaches random's final hypervolume with ≤ {GOAL_RATIO:.2f}× random's compute: "
    met = _meeting_arms(rows)
    if not met:
        return head + "**not met**" + (f"; the best arm is `{best[0]}` at {best[1]:.2f}x" if best else "") + "."

    def cell(arm: str, r: dict[str, Any]) -> str:
        above = "" if _interval_meets_goal(r) else " (the interval reaches above the goal)"
        return f"`{arm}` ({_ratio_cell(r)}{above}, {r['reached']}/{r['seeds']} seeds reach the target)"

    return head + "**met** by " + ", ".join(cell(a, r) for a, r in met.items()) + "."


def _table_choice_text(rep: dict[str, Any]) -> list[str]:
    """Why the full table switches the methods it does (the quick table is only a smoke test: nothing)."""
    if list(rep["grid"]["algorithms"]) != GRID["algorithms"]:
        return []
    return ["", f"**Why this table.** A search of {rep['n_trials']} trials sees at most "
            f"{rep['n_trials'] / max(rep['table_rows'], 1):.0%} of its recipes. Until 2026-11-26 the table had 5 "
            "switches (channels_last, progressive_resizing, blurpool, mixup, ema: 96 recipes, 48 distinct "
            "outcomes as ema changed nothing at these lengths), where random search's 26 trials covered about half "
            "of what could be found: there the best arm (`tpe+promote`) needed 0.50x of random's compute and even "
            "a searcher that knew every outcome 0.22x (this section's previous runs, in git). The real spaces "
            "this tool searches (`search_spaces/digits.yaml`: 12 methods with continuous settings, learning rate, "
            "weight decay, optimizer) are far larger than any trial budget, so the table now switches 8 of the "
            "digits space's methods (label_smoothing, sam, patch_whitening added): 768 recipes."]


def _arms_text(arms: set[str]) -> str:
    return ", ".join(f"{a}: sampler {s}, scheduler {sc}" for a, (s, sc) in REAL_ARMS.items() if a in arms)


def _step_median(curves: list[list[list[float]]], grid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Median and IQR over runs of step functions hv(t) sampled on ``grid``."""
    from recipesearch.analysis.hypervolume_reach import on_grid

    a = on_grid([(np.asarray(s), np.asarray(h)) for s, h in curves], grid)
    return np.median(a, 0), np.percentile(a, 25, 0), np.percentile(a, 75, 0)


def plot(part: dict[str, Any], name: str, title: str, normalised: bool) -> str | None:
    """Median (IQR band) over seeds of hypervolume reached within t seconds of training, per arm.

    Normalised (replay): plots the gap to the table's best front, 1 - HV/HV_max, on a log axis, where the
    arms differ; raw (real runs): plots the hypervolume itself. FIFO arms solid; scheduler arms (dashed) and
    peers (dotted) in their longer runs only, whose first trials are about their short runs' (fewer lines).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = part.get("curves") or {}
    if not curves:
        return None
    tmax = max(c[0][-1] for cs in curves.values() for c in cs if c[0])
    grid = np.linspace(0, tmax, 400)
    fig, ax = plt.subplots(figsize=(10.5, 4.6))
    tf = (lambda v: np.maximum(1.0 - v, 1e-4)) if normalised else (lambda v: v)
    for arm, cs in curves.items():
        cs = [c for c in cs if c[0]]
        if not cs or (arm_of(arm) in LONG_ARMS and arm == arm_of(arm)):
            continue
        med, lo, hi = _step_median(cs, grid)
        style = ":" if arm_of(arm) in (SYNETUNE, CONTROL) else "--" if arm_of(arm) in LONG_ARMS else "-"
        (line,) = ax.plot(grid, tf(med), label=f"{arm} ({len(cs)} run{'s' if len(cs) > 1 else ''})", ls=style,
                          lw=2.2 if arm == "random" else 1.4)
        if len(cs) > 2 and arm_of(arm) in ("random", "tpe", "random+moasha", "promote", SYNETUNE):
            ax.fill_between(grid, tf(lo), tf(hi), color=line.get_color(), alpha=0.10)
    target = part["analysis"].get("target_hv")
    if target and math.isfinite(target):
        ax.axhline(tf(target), color="k", ls=":", lw=0.8, label="random's final HV (median)")
    if normalised:
        ax.set_yscale("log")
        ax.set_ylim(top=1.05)
    ax.set_xlabel("cumulative training time of the search's trials (s)")
    ax.set_ylabel("1 - hypervolume / table's best (log)" if normalised else "hypervolume")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: the curves fill the axes
    fig.tight_layout()
    return save_figure(fig, name)


def _ratio_cell(row: dict[str, Any]) -> str:
    ratio, (lo, hi) = row["relative_to_random"], row.get("relative_interval_95") or [math.nan, math.nan]
    if not math.isfinite(ratio):  # some resamples may still reach it: say so
        return "not reached" + (f" [{fmt(lo, '.2f')}–never]" if math.isfinite(lo) else "")
    spread = f" [{fmt(lo, '.2f')}–{fmt(hi, '.2f') if math.isfinite(hi) else 'never'}]" if not math.isnan(lo) else ""
    return f"{ratio:.2f}x{spread}"


def _interval_meets_goal(row: dict[str, Any]) -> bool:
    """The bootstrap interval's upper end is within the goal (not just the median curve's ratio)."""
    hi = (row.get("relative_interval_95") or [math.nan, math.nan])[1]
    return math.isfinite(hi) and hi <= GOAL_RATIO


def _goal_cell(row: dict[str, Any]) -> str:
    if not row.get("goal_met"):
        return "not met"
    return "met" + (" (interval too)" if _interval_meets_goal(row) else " (not across the interval)")


def _lost_cell(lost: dict[str, Any] | None) -> str:
    if not lost:
        return "– (stops nothing)"
    return (f"{fmt_summary(lost['lost'], '.1%', 'iqr')}; {lost['wrongly_stopped']} of {lost['stopped']} stopped "
            f"trials wrongly; {lost['runs_losing']}/{lost['runs']} runs lose some")


def _replay_table(rep: dict[str, Any]) -> str:
    analysis, arms, lost = rep["analysis"], rep.get("arms") or {}, rep.get("frontier_lost") or {}
    trials = rep.get("trials") or {}
    rows = []
    for arm, r in analysis["rows"].items():
        sampler, scheduler = (arms[arm]["sampler"], arms[arm]["scheduler"]) if arm in arms else \
            ("random (Syne Tune's)", "Syne Tune MOASHA" if arm_of(arm) == SYNETUNE else "our moasha rule")
        t = r["compute_to_target"]
        used = (rep.get("trials_used") or {}).get(arm)
        n = f"{fmt_summary(used, '.0f', 'iqr')} (cap {trials[arm]})" if used else trials.get(arm, rep["n_trials"])
        rows.append([arm, sampler, scheduler, n, r["seeds"],
                     fmt(t, ".0f") if math.isfinite(t) else "not reached",
                     _ratio_cell(r), _goal_cell(r) if arm != "random" else "–", f"{r['reached']}/{r['seeds']}",
                     fmt_summary(r["total_train_seconds"], ".0f", "iqr"), fmt_summary(r["final_hv"], ".3f", "iqr"),
                     fmt_summary(r.get("stopped_per_run") or {}, ".0f", "iqr"), _repeats_cell(r),
                     _lost_cell(lost.get(arm))])
    return md_table(["arm", "sampler", "scheduler", "trials", "seeds",
                     "train s to reach random's final HV (median curve)",
                     "x random's compute [95% bootstrap over seeds]", f"goal <= {GOAL_RATIO:.2f}x",
                     "seeds reaching it", "compute per search (train s) [IQR]", "final HV / table's [IQR]",
                     "stopped trials per search [IQR]", "repeated proposals per search, not trained [IQR]",
                     "frontier lost to stopping: median [IQR]"], rows)


def _repeats_cell(row: dict[str, Any]) -> str:
    """Results from before the loop answered repeats (every repeat trained again) have no count."""
    return fmt_summary(row["repeats_per_run"], ".0f", "iqr") if row.get("repeats_per_run") else "– (trained again)"


def _real_table(analysis: dict[str, Any]) -> str:
    rows = []
    for s, r in analysis["rows"].items():
        t = r["compute_to_target"]
        rows.append([s, r["seeds"], fmt_summary(r["final_hv"], ".4g", "iqr"),
                     fmt_summary(r["total_train_seconds"], ".0f", "iqr"),
                     fmt(t, ".0f") if math.isfinite(t) else "not reached",
                     fmt(r["relative_to_random"], ".2f"),
                     f"{r['reached']}/{r['seeds']}", fmt_summary(r["time_to_target_per_seed"], ".0f", "iqr"),
                     _repeats_cell(r)])
    return md_table(["sampler", "seeds", "final hypervolume [IQR]", "compute spent (train s) [IQR]",
                     "train s to reach random's final HV (median curve)", "relative to random", "seeds reaching it",
                     "train s to reach it, those seeds [IQR]", "repeated proposals per search, not trained [IQR]"],
                    rows)


def _oracle_text(rep: dict[str, Any]) -> list[str]:
    """How far the goal is from what any search could do on this table (``oracle_bound``)."""
    o = rep.get("oracle")
    if not o:
        return []
    per_run = o["cheapest_budget_median_seconds"]
    return ["", (
        f"**Room for the goal on this table.** The cheapest search that reaches random's final hypervolume, "
        f"for a searcher that knew every outcome, trains the baselines ({o['baseline_seconds']:.1f} s, "
        f"{o['baseline_ratio']:.2f}x of random's compute, run first by every arm) and then "
        + (", ".join(f"{'+'.join(r['algorithms']) or 'base'} at budget {r['budget']:g} ({r['train_seconds']:.2f} s)"
                     for r in o["rows"]) or "nothing")
        + f": {o['seconds']:.1f} s, **{o['ratio']:.2f}x** of random's compute"
        + (" (exact: every subset of the table's front tried; a dominated recipe is never needed, its "
           "dominator being cheaper)" if o["exact"] else " (a greedy upper bound: the front was too large to enumerate)")
        + f". The goal ({GOAL_RATIO:.2f}x = {o['goal_seconds']:.1f} s) therefore leaves "
        f"{o['slack_seconds']:.1f} s for everything a search trains outside that set — about "
        f"{max(0.0, o['slack_seconds']) / per_run:.0f} runs at the cheapest budget ({o['cheapest_budget']:g}: "
        f"{per_run:.2f} s each, median) — "
        "before it has found those recipes among the table's; a sampler that learns from its own trials cannot "
        "know them in advance."
    )]


def _rungs_text(rep: dict[str, Any]) -> list[str]:
    """What the rungs know: per budget, the median accuracy at each rung and at the end, and how well a
    rung's ranking predicts the end's."""
    info = rep.get("rung_informativeness") or []
    if not info:
        return []
    by: dict[float, list[dict[str, Any]]] = {}
    for r in info:
        by.setdefault(r["budget"], []).append(r)
    cells = []
    for budget, rows in by.items():
        path = " → ".join(f"{r['median_accuracy']:.2f}" for r in rows) + f" → {rows[0]['median_final_accuracy']:.2f}"
        rhos = ", ".join(f"{r['spearman_with_final']:.2f}" for r in rows)
        cells.append(f"budget {budget:g}: {path} (ρ {rhos})")
    fractions = ", ".join(f"{r['fraction']:.3g}" for r in next(iter(by.values())))
    first = [rows[0]["median_accuracy"] for rows in by.values()]
    text = ("**What the rungs see** (median test accuracy over the budget's recipes at rungs "
            f"{fractions} and at the end; ρ: Spearman rank correlation of a rung's accuracy with the end's, over "
            "those recipes): " + "; ".join(cells) + ".")
    if min(first) < 0.2:  # near chance (10 classes) somewhere: say why and what the late-rung arm is for
        text += (" Digits runs are short (a few dozen to ~150 steps), so the first rung comes after a handful "
                 "of steps, inside the LR warmup, where recipes are still near chance (0.10) at the small "
                 "budgets: there MO-ASHA ranks mostly on train_seconds. The arm `random+moasha, rung 1/3 only` "
                 "(`min_fraction: 1/3`) decides at the later rung only.")
    return ["", text]


def _peer_text(rep: dict[str, Any]) -> list[str]:
    peer = rep.get("peer") or {}
    if not peer.get("arms"):
        return ["", "_Syne Tune was not installed when this ran (`pip install -e '.[bench]'`): no peer rows._"]
    return ["", f"**Peer: Syne Tune {peer['synetune_version']}'s MOASHA** (`syne_tune.optimizer.schedulers."
            "multiobjective.MOASHA`, Schmucker et al. 2021) on the same table, the same "
            f"{rep['n_trials']} trials and, like our scheduler arms, at random's compute, {rep['seeds']} seeds: objectives error = 1 - accuracy and "
            "train_seconds, both minimised; `time_attr` = rung level 1, 3, 9 (after 1/9, 1/3 and all of the "
            "steps), `grace_period` 1, `max_t` 9, `reduction_factor` 3. Not through Syne Tune's `Tuner` and "
            "simulator backend: those advance simulated time by the tuner's polling interval (and by real "
            "time spent outside the backend), so a trial of well under a second would reach its end before "
            "its STOP is read; instead `bench/search_efficiency/peers.py` (`peer_run`) drives MOASHA's own API with "
            f"an explicit event clock, {peer['workers']} workers, asynchronous: each trial's recorded results "
            "arrive at its start time + their train_seconds, the earliest goes to `on_trial_result`, a STOP "
            "(and the last level) to `on_trial_remove` as its `Tuner` does, and a stopped trial frees its "
            "worker at once having cost its last rung's train_seconds. Configurations come from MOASHA's "
            "`suggest` (uniform over the grid; numpy seeded per seed), the first three replaced by the "
            "baseline recipes as in our loop (to Syne Tune they are ordinary trials: it may stop them). "
            "What differs from ours: its rung ranks all trials at a level together, whatever their budget "
            "(ours compares one budget's trials), stops a newcomer whose rank is worse than the best third "
            "from the second trial at a rung on (ours lets all go on while fewer than 3 reported), and orders "
            "a front by an epsilon-net on the raw objectives (ours: hypervolume contribution on scaled ones). "
            f"The control row `{CONTROL}` runs our rule (`analysis.rungs.decide`) in that same driver on the "
            "same configurations, so its gap to Syne Tune's row is the rules' and its gap to `random+moasha` "
            "is the drivers' (event clock vs the loop's in-process executor, Optuna's random sampler)."]


def render(result: dict[str, Any]) -> str:
    parts = [
        "**What**: hypervolume of the (accuracy ↑, train_seconds ↓) front against the cumulative training "
        "time the search has spent (a stopped trial counts the compute it used), for the samplers `tpe` "
        "(multivariate TPE), `nsga2`, `gp`, `random` and the hand `sweep` strategy, and for the schedulers "
        "(`scheduler:` of the space file): MO-ASHA stopping at rungs (`moasha`), promotion across budgets "
        "(`promote`), both; headline: the training time each arm needs to reach the final hypervolume of "
        "random search (median over random's seeds of its final hypervolume), read off the arm's median "
        "curve over seeds (hypervolume reached within t seconds of training), as a multiple of random's "
        "own; < 1 means it gets there with less compute.",
    ]
    rep = result.get("replay")
    if rep:
        t = rep["table"]
        sched = rep.get("scheduler") or {}
        best = min(((a, r["relative_to_random"]) for a, r in rep["analysis"]["rows"].items()
                    if a != "random" and math.isfinite(r["relative_to_random"])), key=lambda x: x[1], default=None)
        parts += [
            "",
            "### Replay (many seeds, seconds each)",
            f"**How**: the discrete digits space budgets {rep['grid']['budgets']} × switches of "
            f"{', '.join(rep['grid']['algorithms'])} (defaults) over `recipes/digits_baseline.yaml` has "
            f"{rep['table_rows']} recipes; each was trained once (2 processes × 1 thread, like a search at "
            f"concurrency 2; {t.get('train_seconds_total', math.nan):.0f} s of training, recorded "
            f"{t.get('recorded', '?')}) into `{t.get('path')}`, with its learning curve: test accuracy (the "
            f"table's split) and train_seconds so far after "
            f"{', '.join(f'{f:.3g}' for f in sched.get('rungs', []))} of its steps (the trainer pauses its "
            f"clock to evaluate; eta {sched.get('reduction_factor', '?')}). Every arm then searched that "
            f"table (`bench/replay.py`: the search loop `SearchLoop` without Ray, baselines first, "
            f"{rep['concurrency']} trials asked per round, lookups by the canonical params key; with a "
            "scheduler, the executor reports the recipe's recorded rung values to the loop's `on_rung` in "
            "order and stops the trial when told, so the loop's own MO-ASHA and promotion code decides) with "
            f"{rep['seeds']} seeds × {rep['n_trials']} trials (stopped ones count). The scheduler arms and the "
            f"peers also ran *at random's compute* (rows '{LONG_SUFFIX.strip()}'): up to "
            f"{rep.get('long_factor', LONG_FACTOR)}× the trials, each search cut where its compute first reached "
            f"random's median compute per search ({rep.get('compute_budget', math.nan):.0f} train s), because a "
            "stopped trial costs a fraction of a run but counts as a whole trial: at the same trial count a "
            "pruning search ends having spent far less compute, and the goal is about compute (the target "
            "stays random's final hypervolume at its trial count; the 'trials' column gives the median trials "
            "those searches used). Hypervolume is divided by the "
            f"whole table's (1.0 = the best front of this space); reference point (accuracy, seconds) = "
            f"({rep['analysis']['reference'][0]:.3f}, {rep['analysis']['reference'][1]:.1f}). The interval is "
            f"the 2.5–97.5% percentiles over {rep['analysis'].get('bootstrap', BOOTSTRAP)} bootstrap "
            "resamples of the seeds (the arm's and random's, the target recomputed each time; 'never': the "
            "resampled median curve did not reach it); random's own interval is the noise floor. *Frontier "
            "lost*: per search, 1 − HV(full-budget outcomes of the trials it completed) / HV(full-budget "
            "outcomes of every trial it started, stopped ones at the value they would have reached), and how "
            "many stopped trials were *wrongly* stopped (their full outcome dominated by none of the search's "
            "completed trials). Exact-hit rate: "
            f"{', '.join(f'{s} {v:.0%}' for s, v in rep['hit_rate'].items())}. Compute of the replay itself: "
            f"{', '.join(f'{s} {v:.1f} s' for s, v in rep['replay_seconds'].items())}.",
            *_table_choice_text(rep),
            "",
            _replay_table(rep),
            *_oracle_text(rep),
            *_rungs_text(rep),
            *_peer_text(rep),
            "",
            *[f"- {n}" for n in rep.get("sampler_notes", [])],
            "",
            _replay_goal_text(rep["analysis"]["rows"], best),
        ]
        img = plot(rep, f"{NAME}_replay", f"replay: {rep['seeds']} seeds per arm (median; IQR band for a few)", True)
        if img:
            parts += ["", f"![hypervolume vs compute, replay]({img})"]
    real = result.get("real")
    if real:
        errors = [f"{r['sampler']} seed {r['seed']}: {r['error']}" for r in real["runs"] if "error" in r]
        walls = summarize(r["wall_seconds"] for r in real["runs"] if "wall_seconds" in r)
        loads = summarize(r["load"][0] for r in real["runs"] if r.get("load"))
        parts += [
            "",
            "### Real searches (trials really train)",
            f"**How**: `recipesearch.engine.api.search` on `{real['space']}` with only the sampler and the "
            f"scheduler swapped ({_arms_text({r['sampler'] for r in real['runs']})}; "
            "stopped trials count the compute they used), "
            f"{real['seeds']} seed(s) per sampler, samplers interleaved within a seed; trials in completion "
            f"order; reference point = that of all real trials together "
            f"({real['analysis']['reference'][0]:.3f}, {real['analysis']['reference'][1]:.1f}). Wall time per "
            f"search {fmt_summary(walls, '.0f', 'range')} s; load average (1 min) at each search's start "
            f"{fmt_summary(loads, '.1f', 'range')} ({os.cpu_count()} cores here; above that, other work "
            "shared the machine and train_seconds are longer than on an idle one, arms alike as they are "
            "interleaved within a seed). Run dirs (trials.csv, report) under `runs/bench-search/`."
            + (f" Errors: {'; '.join(errors)}." if errors else "")
            + (f" These searches are from the run of {real['from_previous_run']}; only the replay above was run "
               "again since (`--skip-real`)." if real.get("from_previous_run") else "")
            + (" With one seed and a few trials per sampler these rows are anecdotes (trial order under Ray and "
               "noisy train_seconds also differ run to run); the replay above is the sampler comparison."
               if real["seeds"] < 3 else ""),
            "",
            _real_goal_text(real["analysis"]),
            "",
            _real_table(real["analysis"]),
        ]
        img = plot(real, f"{NAME}_real", "real searches on the digits space (median over seeds)", False)
        if img:
            parts += ["", f"![hypervolume vs compute, real runs]({img})"]
    else:
        parts += ["", "_Real searches were not run in this invocation._"]
    return "\n".join(parts)
