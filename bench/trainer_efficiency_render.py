"""trainer_efficiency's section of reports/benchmarks.md (§1), from the saved results alone: the timed arms'
images/s, per CPU-second and FLOP/s tables, then the instruction counts and the event-loop overhead sections.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from bench.common import fmt, fmt_summary, goal_text, md_table, save_figure
from bench.trainer_efficiency import ARMS, BATCH, GOAL_RATIO, NAME, THREADS
from bench.trainer_instructions import insn_goal, instructions_section
from bench.trainer_loop_overhead import loop_section


def plot(result: dict[str, Any]) -> str | None:
    """Images/s per arm and run, one panel per config (the figure's path under reports/, or None)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    configs = result["configs"]
    fig, axes = plt.subplots(1, len(configs), figsize=(4.5 * len(configs), 3.2), squeeze=False)
    for ax, c in zip(axes[0], configs):
        for i, arm in enumerate(ARMS):
            vals = [m["images_per_s"] for m in c["runs"] if m["arm"] == arm]
            ax.scatter([i] * len(vals), vals, s=14, alpha=0.6)
            ax.hlines(np.median(vals), i - 0.25, i + 0.25, color="k")
        ax.set_xticks(range(len(ARMS)), [a.replace("+", "+\n") for a in ARMS], fontsize=8)
        ax.set_ylabel("images/s")
        ax.set_title(f"{c['label']} (batch {c['batch_size']}, {c['threads']} threads)", fontsize=9)
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    return save_figure(fig, NAME)


def render_section(result: dict[str, Any]) -> str:
    """§1 from the saved results: the timed arms' tables, the instruction counts, the loop overhead, the figure."""
    peak = result["peak_matmul"]["best_flops_per_s"]
    n = result["peak_matmul"]["before"]["n"]
    rows = []
    for c in result["configs"]:
        ips = c["images_per_s"]
        r = c["ratio_trainer_over_bare"]
        rows.append([
            c["label"], c["steps"], c["images_per_s"]["trainer"]["n"],
            fmt_summary(ips["bare"], ".0f"), fmt_summary(ips["trainer"], ".0f"),
            fmt_summary(r, ".3f"), f"{fmt(r['min'], '.3f')}–{fmt(r['max'], '.3f')}",
            fmt(c.get("ratio_best_trainer_over_best_bare"), ".3f"),
            "yes" if r["median"] >= GOAL_RATIO else "no",
            fmt_summary(ips["trainer+channels_last"], ".0f"),
            fmt_summary(c["ratio_channels_last_over_trainer"], ".3f"),
            fmt_summary(c["data_wait_fraction_trainer"], ".3f"),
        ])
    cpu_rows = []
    for c in result["configs"]:
        if "images_per_cpu_s" not in c:
            continue
        cps, r = c["images_per_cpu_s"], c["cpu_ratio_trainer_over_bare"]
        cpu_rows.append([c["label"], fmt_summary(cps["bare"], ".0f"), fmt_summary(cps["trainer"], ".0f"),
                         fmt_summary(r, ".3f"), "yes" if r["median"] >= GOAL_RATIO else "no",
                         fmt_summary(cps["trainer+channels_last"], ".0f"),
                         fmt_summary(c["cpu_ratio_channels_last_over_trainer"], ".3f")])
    flop_rows = []
    for c in result["configs"]:
        flop_rows.append([
            c["label"], f"{c['flops_per_step'] / 1e9:.3f}",
            fmt_summary({k: (v / 1e9 if k != "n" else v) for k, v in c["achieved_flops_per_s"].items()}, ".2f"),
            f"{peak / 1e9:.1f}", fmt_summary({k: (v * 100 if k != "n" else v) for k, v in c["fraction_of_peak"].items()}, ".1f"),
        ])
    img = plot(result)
    goal = result["goal"]
    parts = [
        "**What**: images/s of the recipesearch `Trainer` with no algorithms against a bare hand-written "
        "PyTorch loop (`bench/trainer_efficiency.py::bare_loop`) on the same model, the same uint8 "
        "device-resident data with the same per-batch crop/flip/normalise, the same batch size, optimizer "
        "(decoupled SGDW, Nesterov) and LR schedule, the same number of steps; plus the Trainer with "
        "`channels_last` on, and the achieved training FLOP/s against the machine's measured peak.",
        "**How**: three arms run interleaved (order rotated every repeat) after one untimed warm-up each; "
        "only the training steps are timed (construction excluded in both). Ratios are paired within a "
        f"repeat. Threads = {THREADS}, batch = {BATCH}, CPU. {result['repeats']} repeats per arm"
        f"{' (--quick)' if result['quick'] else ''}.",
        f"**Goal**: Trainer/bare images/s ratio ≥ {goal['ratio_min']} (median, every config): wall-clock "
        f"{goal_text(goal['met'])}; per CPU-second {goal_text(goal.get('met_cpu_time'))}"
        f"{insn_goal(result.get('instructions'))}.",
        f"**Load**: 1-minute load average during the runs {fmt_summary(result.get('load_during_runs', {}), '.1f', 'range')} "
        "on a 2-core machine (other jobs may share it). Wall-clock throughput is what a user "
        "gets, but under a changing load it moves by integer factors between runs; images per CPU-second of "
        "the process (`time.process_time`) is much less sensitive to other processes (it still counts a "
        "thread spinning while its partner is descheduled), so both are shown and the CPU-time ratios are "
        "the better estimate of the code's own overhead when the load is high.",
        "",
        md_table(["config", "steps/run", "repeats", "bare img/s", "Trainer img/s", "Trainer/bare (median [IQR])",
                  "ratio min–max", "best/best", "≥ 0.98", "Trainer+channels_last img/s", "channels_last/off",
                  "Trainer data-wait fraction"], rows),
        "",
        "The same runs per CPU-second (images / CPU seconds of the process during the timed steps):",
        "",
        md_table(["config", "bare img/CPU-s", "Trainer img/CPU-s", "Trainer/bare (median [IQR])", "≥ 0.98",
                  "Trainer+channels_last img/CPU-s", "channels_last/off"], cpu_rows),
        "",
        f"Distance to the physical limit (FLOPs from `torch.utils.flop_counter.FlopCounterMode` over one "
        f"forward+loss+backward — matmul/conv FLOPs only; peak = best fp32 `torch.mm` {n}x{n} at "
        f"{THREADS} threads, measured before and after the arms):",
        "",
        md_table(["config", "GFLOP per training step", "achieved GFLOP/s (Trainer)", "peak GFLOP/s (mm)",
                  "% of peak"], flop_rows),
    ]
    parts += instructions_section(result.get("instructions"))
    parts += loop_section(result.get("loop_overhead"))
    if img:
        parts += ["", f"![images/s per arm]({img})"]
    return "\n".join(parts)
