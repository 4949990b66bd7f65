"""§10 of reports/benchmarks.md from bench/gpu.py's saved results: the time plan, the issue-30 keys at a glance,
one table per section; a section not run yet, skipped or failed says so. The earlier sections (``gpu_extra``)
render below when the results hold them."""
from __future__ import annotations

import math
from typing import Any

from bench.common import fmt, md_table

NEW = ("overhead", "reproduction", "packing", "search")
EARLIER = ("side_by_side", "fashion_mnist", "method_costs")  # gpu_extra's sections, titled by their keys
TITLES = {"overhead": "Trainer vs a bare loop", "reproduction": "airbench94 reproduced",
          "packing": "Trials packed per GPU", "search": "A search on the GPU", "cuda_tests": "CUDA tests",
          **{key: key for key in EARLIER}}
# (JSON key path, what it is, goal as text, met: value -> bool)
GLANCE = (
    ("overhead.trainer_vs_bare", "Trainer / bare images/s, ResNet-9 (median)", ">= 0.97", lambda v: v >= 0.97),
    ("overhead.with_hooks", "the same with 10 no-op method hooks", ">= 0.95", lambda v: v >= 0.95),
    ("reproduction.time_to_94_ratio", "our airbench94 recipe's time to 94 % / airbench's", "<= 1.10",
     lambda v: v <= 1.10),
    ("reproduction.max_accuracy_gap_pp", "largest accuracy gap at an epoch count (pp)", "<= 0.3", lambda v: v <= 0.3),
    ("search.best_time_to_94_vs_airbench", "the search's best recipe: time to 94 % / airbench's", "<= 0.9 (confirmed)",
     lambda v: v <= 0.9),
)


def value_at(result: dict[str, Any], path: str) -> Any:
    node: Any = result
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def glance_rows(result: dict[str, Any]) -> list[list[str]]:
    rows = []
    for path, what, goal, met in GLANCE:
        v = value_at(result, path)
        finite = isinstance(v, (int, float)) and math.isfinite(v)
        status = ("met" if met(v) else "not met") if finite else "not measured"
        if path.startswith("search.") and finite and not (result.get("search", {}).get("headline") or {}).get("confirmed"):
            status += " (recipe not confirmed)"
        rows.append([f"`{path}`", what, fmt(v, ".3f") if finite else "–", goal, status])
    return rows


def absence(result: dict[str, Any], key: str) -> tuple[str, str | None] | None:
    """Why a section has no results to show: ("not run yet", None), ("skipped", why) or ("failed", error); None
    when it has results."""
    sec = result.get(key)
    if sec is None:
        return ("not run yet", None)
    if sec.get("skipped") and set(sec) <= {"skipped", "finished"}:
        return ("skipped", sec["skipped"])
    if "error" in sec:
        return ("failed", sec["error"])
    return None


def _absent_line(key: str, title: str, why: tuple[str, str | None] | None) -> str | None:
    """The line for a section that has no results to show (``why``: its ``absence``), or None."""
    if why is None:
        return None
    state, detail = why
    if state == "not run yet":
        return f"**{title}**: _not run yet_ (`python -m bench.gpu --only {key}` on a GPU machine)."
    return f"**{title}**: {state}: {detail}." if state == "skipped" else f"**{title}**: {state}: `{detail}`."


def shown_sections(result: dict[str, Any]) -> list[tuple[str, tuple[str, str | None] | None]]:
    """The sections §10 shows, in order, each with its ``absence`` (None: its results render): the issue-30 ones
    always, the CUDA tests (in the plan when time is left) and the earlier ones when the results hold them."""
    keys = [*NEW, *(["cuda_tests"] if "cuda_tests" in result else []),
            *(key for key in EARLIER if result.get(key) is not None)]
    return [(key, absence(result, key)) for key in keys]


def plan_text(result: dict[str, Any]) -> str:
    plan = result.get("plan") or {}
    rows = [["setup", "", fmt(plan.get("setup_seconds"), ".0f"), ""]]
    rows += [[k, fmt(v.get("planned"), ".0f"), fmt(v.get("seconds"), ".0f"), v.get("skipped") or "ran"]
             for k, v in (plan.get("sections") or {}).items()]
    return "\n".join([f"**Time plan** (budget {fmt(plan.get('budget_seconds'), '.0f')} s; whole run "
                      f"{fmt(result.get('wall_seconds'), '.0f')} s):", "", md_table(["section", "planned s", "took s",
                                                                                     "status"], rows)])


def overhead_text(o: dict[str, Any]) -> str:
    rows = []
    for net, r in o["nets"].items():
        ips, ratio = r["images_per_s"], r["ratio"]
        rows.append([net, fmt(ips["bare"]["median"], ".0f"), fmt(ips["trainer"]["median"], ".0f"),
                     fmt(ips["trainer+10 hooks"]["median"], ".0f"), _iqr(ratio["trainer"]), _iqr(ratio["trainer+10 hooks"]),
                     str(ratio["trainer"]["n"]) + (f" ({r['skipped']})" if r.get("skipped") else "")])
    return "\n".join([
        f"**Trainer vs a bare loop** (`bench/gpu_overhead.py`): {o['steps']} steps of {o['batch']} images, "
        f"{o['precision']}, channels_last, device-resident data, timed by {o['timer']}; ratio = bare's time / the "
        f"arm's in the same round. Goals {o['goals']['trainer_vs_bare']} and {o['goals']['with_hooks']} (ResNet-9).", "",
        md_table(["net", "bare img/s", "Trainer img/s", "Trainer+10 hooks img/s", "Trainer/bare [IQR]",
                  "+10 hooks/bare [IQR]", "rounds"], rows)])


def _iqr(s: dict[str, Any]) -> str:
    if not s or not s.get("n"):
        return "–"
    return f"{s['median']:.3f} [{s['q1']:.3f}–{s['q3']:.3f}]" if s["n"] > 1 else f"{s['median']:.3f}"


def curve_rows(side: dict[str, Any]) -> list[list[str]]:
    """One row per epoch count: each side's median train s and accuracy, and the gap."""
    med = {(m["side"], m["epochs"]): m for m in side["medians"]}
    gaps = {g["epochs"]: g["gap_pp"] for g in side["gaps"]}
    rows = []
    for e in sorted({m["epochs"] for m in side["medians"]}):
        a, o = med.get(("airbench", e), {}), med.get(("ours", e), {})
        rows.append([f"{e:g}", fmt(a.get("train_seconds"), ".2f"), fmt(a.get("accuracy"), ".4f"),
                     fmt(o.get("train_seconds"), ".2f"), fmt(o.get("accuracy"), ".4f"), fmt(gaps.get(e), "+.2f")])
    return rows


def time_to_text(side: dict[str, Any]) -> str:
    t = side["time_to_target"]

    def secs(x: dict[str, Any]) -> str:
        if not math.isfinite(x["seconds"]):
            return "not reached"
        return ("≤ " if x["upper_bound"] else "") + f"{x['seconds']:.2f} s"

    per_seed = ", ".join(fmt(p["ratio"], ".2f") for p in side["time_to_target_per_seed"]) or "–"
    return (f"Time to {side['target']:.0%}: airbench {secs(t['airbench'])}, ours {secs(t['ours'])}: ratio "
            f"{fmt(t['ratio'], '.2f')} on the curves of medians (per seed: {per_seed}).")


def reproduction_text(r: dict[str, Any]) -> str:
    ab = r.get("airbench") or {}
    who = f"{ab.get('what', 'airbench')} {ab.get('version', '')}".strip() if "skipped" not in ab else \
        f"airbench not run: {ab['skipped']}"
    lines = [f"**airbench94 reproduced** (`bench/gpu_repro.py`): `{r['recipe']}` (all training images) beside {who}, "
             f"on {r['data']}; seeds {r['seeds']}, sides alternating. Goals: time to 94 % within "
             f"{r['goals']['time_to_94_ratio']}x, accuracy within {r['goals']['max_accuracy_gap_pp']} pp at each epoch "
             f"count.", "", md_table(["epochs", "airbench s", "airbench acc", "ours s", "ours acc", "ours - airbench pp"],
                                     curve_rows(r)), "", time_to_text(r)
             + f" Largest gap {fmt(r['max_accuracy_gap_pp'], '.2f')} pp." + (f" {r['skipped']}." if r.get("skipped") else "")]
    comp = r.get("compile") or {}
    rows = compile_rows(comp)
    if rows:
        lines += ["", f"torch.compile on and off at {comp['epochs']:g} epochs (train time on / off per seed; the first "
                      f"compiled 1-epoch run pays the compile):", "",
                  md_table(["mode", "first run s", "on / off time", "status"], rows)]
    return "\n".join(lines)


def compile_rows(comp: dict[str, Any]) -> list[list[str]]:
    """One row per torch.compile mode: the first (compiling) run's seconds, on / off train time, and its status."""
    rows = []
    for label, m in (comp.get("modes") or {}).items():
        if "skipped" in m:
            rows.append([label, "–", "–", f"skipped: {m['skipped']}"])
        else:
            rows.append([label, fmt(m["warm_up"].get("train_seconds"), ".1f"), _iqr(m["on_over_off"]),
                         "; ".join(m["errors"]) or "ok"])
    return rows


def packing_rows(p: dict[str, Any]) -> list[list[str]]:
    """One row per packing level (trials per GPU): its trials, images/s per trial, in total and over the wall,
    GPU utilisation and how they were packed; a skipped level says why."""
    rows = []
    for k, v in p.items():
        if not isinstance(v, dict):
            continue
        if "skipped" in v:
            rows.append([k, "–", "–", "–", "–", "–", f"skipped: {v['skipped']}"])
            continue
        u = v["gpu_utilisation"]
        rows.append([k, str(v["n_trials"]), fmt(v["images_per_s_per_trial"]["median"], ".0f"),
                     fmt(v["images_per_s_total"], ".0f"), fmt(v.get("images_per_s_over_wall"), ".0f"),
                     f"{fmt(u['mean'], '.0f')} % ({fmt(u['median'], '.0f')} median)",
                     v["method"] + ("; " + "; ".join(v["errors"]) if v["errors"] else "")])
    return rows


def packing_text(p: dict[str, Any]) -> str:
    rows = packing_rows(p)
    backends = sorted({v["gpu_utilisation"]["backend"] for v in p.values() if isinstance(v, dict) and "gpu_utilisation" in v})
    return "\n".join([f"**Trials packed per GPU** (`bench/gpu_search.py`; in total: all trials' images over the span "
                      f"of their training, and over the level's whole wall time, start-up included; utilisation from "
                      f"{', '.join(backends) or '–'}):", "",
                      md_table(["trials per GPU", "trials", "images/s per trial", "images/s in total",
                                "images/s over the wall", "utilisation", "how"], rows)])


def search_text(s: dict[str, Any]) -> str:
    h = s.get("headline") or {}
    lines = [f"**A search on the GPU** (`bench/gpu_search.py`): `{s['space']}` cut to budgets {s['budgets']}, "
             f"{s['proposals']} proposals, confirmation with {s['confirm_seeds']} seeds; {s['executor']} executor, "
             f"{s['trials_per_gpu']} trial(s) per GPU; {len(s['trials'])} trials finished "
             f"({s['confirmation_runs']} confirmation runs) in {fmt(s['run']['wall_seconds'], '.0f')} s, GPU "
             f"utilisation {fmt(s['gpu_utilisation']['mean'], '.0f')} %. Headline: trial {h.get('number')} "
             f"({h.get('how')}): {h.get('algorithms') or 'no methods'}. {h.get('verdict', '')}"]
    v = s.get("versus") or {}
    if "skipped" in v and "medians" not in v:
        lines.append(f"Against airbench: not run: {v['skipped']}.")
    elif v:
        lines += ["", md_table(["epochs", "airbench s", "airbench acc", "ours s", "ours acc", "ours - airbench pp"],
                               curve_rows(v)), "", time_to_text(v) + " Goal: <= 0.9 with a confirmed recipe."]
    return "\n".join(lines)


def render(result: dict[str, Any]) -> str:
    from bench import gpu_extra

    lines = [f"**What**: on {result.get('gpu')} (torch {result.get('torch')}), in one script of at most 9 minutes "
             f"(`python -m bench.gpu`; `bench/gpu.py`'s docstring says how): the Trainer against a bare loop, "
             f"airbench94 reproduced beside airbench's own train94, trials packed per GPU, and a search's best recipe "
             f"beside airbench. Images: {result.get('data', 'Fashion-MNIST as CIFAR-10')}."]
    if result.get("dry_run"):
        lines.append("**Dry run on CPU stand-ins**: tiny sizes, airbench's side a stand-in; the numbers only show that "
                     "every section runs.")
    if result.get("partial"):
        lines.append("**This run was cut short**: only the sections below were measured.")
    if result.get("plan"):
        lines += ["", plan_text(result)]
    lines += ["", "**At a glance** (reports/bench/gpu.json keys):", "",
              md_table(["key", "what", "value", "goal", "status"], glance_rows(result))]
    texts = {"overhead": overhead_text, "reproduction": reproduction_text, "packing": packing_text,
             "search": search_text, "cuda_tests": gpu_extra.tests_text, "side_by_side": gpu_extra.side_text,
             "fashion_mnist": gpu_extra.fashion_text, "method_costs": gpu_extra.costs_text}
    shown = shown_sections(result)
    first_earlier = next((key for key, _ in shown if key in EARLIER), None)
    for key, why in shown:
        if key == first_earlier:
            lines += ["", "_Earlier sections (`bench/gpu_extra.py`; `python -m bench.gpu --only NAME`), each as of its "
                          "own last run:_"]
        lines += ["", _absent_line(key, TITLES[key], why) or texts[key](result[key])]
    return "\n".join(lines)
