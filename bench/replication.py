"""Replication: do the confirmed speedups of a search hold up on seeds the search never used?

For each finished search run directory (the digits and Fashion-MNIST spaces by default) this runs
``recipesearch replicate RUN_DIR --seeds N`` (engine/replicate.py): every confirmed claim of its frontier
(recipe curves whose curve-vs-curve speedup has a bootstrap interval above 1, and confirmed front points)
is retrained with fresh seeds (recipe seed = the space's seed + 1000 + k: never a seed index of the search)
at every budget the claim needs, interleaved with the baseline at every budget with the same fresh seeds,
and scored on **test**, the split the search never chose on (analysis/replication.py). *Inside* means the
fresh test speedup lies within the interval the search reported (on validation). The headline's fresh
speedup and the confirmation stage's share of the search's training time are reported as well. Goal:
>= 80 % of confirmed speedups inside their interval. A replication interrupted is resumed on the next run.

    python -m bench.replication                       # digits: search it now; Fashion-MNIST: runs/fm-new if present
    python -m bench.replication --runs RUN_DIR [...]  # replicate finished searches
    python -m bench.run_all --only replication [--quick]
"""
from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.common import ROOT, environment, fmt, md_table, save_result

NAME = "replication"
TITLE = "Replication: confirmed speedups retrained with fresh seeds, scored on test"
GOAL_INSIDE = 0.80
DEFAULT_RUNS = {"digits": ROOT / "search_spaces/digits.yaml", "fashion_mnist": ROOT / "search_spaces/fashion_mnist.yaml"}
FM_RUN = ROOT / "runs/fm-new"  # the Fashion-MNIST search behind reports/examples/fashion_mnist


def _claim_dict(row: pd.Series) -> dict[str, Any]:
    """One row of replication.csv as this benchmark's saved results hold a claim."""
    return {"kind": row["kind"], "number": int(row["number"]), "algorithms": row["algorithms"],
            "budgets": [float(b) for b in str(row["budgets"]).split()], "speedup": float(row["reported_speedup"]),
            "ci": [float(row["reported_ci_low"]), float(row["reported_ci_high"])],
            "fresh_speedup_test": float(row["fresh_speedup"]),
            "fresh_ci": [float(row["fresh_ci_low"]), float(row["fresh_ci_high"])],
            "fresh_speedup_val": float(row["fresh_speedup_val"]), "inside": bool(row["inside"]),
            "headline": bool(row["headline"]), "hardware": row["hardware"], "load_1m": float(row["load_1m"])}


def replicate(run_dir: Path, seeds: int, executor: str = "ray") -> dict[str, Any]:
    """``recipesearch replicate RUN_DIR --seeds N`` (confirmed claims, into RUN_DIR/replication), summarised."""
    from recipesearch.engine.replicate import ReplicateOptions
    from recipesearch.engine.replicate import replicate as run_replication

    start = time.perf_counter()
    out = run_replication(run_dir, ReplicateOptions(seeds=seeds, claims="confirmed", executor=executor, quiet=True,
                                                    report=False, resume=(run_dir / "replication").is_dir()))
    meta = json.loads((run_dir / "run.json").read_text())
    trials = pd.read_csv(run_dir / "trials.csv")
    secs = pd.to_numeric(trials["train_seconds"], errors="coerce").fillna(0.0)
    stage = trials["stage"] if "stage" in trials else pd.Series("", index=trials.index)
    confirm_share = float(secs[stage == "confirm"].sum() / secs.sum()) if secs.sum() > 0 else math.nan
    claims = [_claim_dict(r) for _, r in out.scored.iterrows()]
    head = next((c for c in claims if c["headline"]), None)
    headline = {"number": head["number"], "speedup": head["speedup"], "ci": head["ci"],
                "fresh_speedup_test": head["fresh_speedup_test"]} if head else {}
    return {"run_dir": str(run_dir), "space": meta.get("space_name") or meta.get("space"), "verdict": out.verdict,
            "confirm_share": confirm_share, "claims": claims, "headline": headline, "seeds": seeds,
            "replication_dir": str(out.out) if out.out else None, "wall_seconds": time.perf_counter() - start,
            "inside_share": out.inside_share}


def _search(space: Path, out: Path) -> Path:
    from recipesearch.engine.api import search

    return search(space, out=out, quiet=True, report=False).run_dir.root


def run(quick: bool = False, runs: list[str] | None = None, seeds: int = 3) -> dict[str, Any]:
    env = environment()
    dirs: list[Path] = [Path(r) for r in runs or []]
    if not dirs:
        out = ROOT / "runs" / f"bench-replication-digits-{time.strftime('%Y%m%d-%H%M%S')}"
        dirs.append(_search(DEFAULT_RUNS["digits"], out))
        if not quick:
            dirs.append(FM_RUN if (FM_RUN / "trials.csv").is_file() else
                        _search(DEFAULT_RUNS["fashion_mnist"], FM_RUN))
    spaces = [replicate(d, seeds) for d in dirs]
    return summarise({"name": NAME, "quick": quick, "environment": env,
                      "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "searches": spaces, "goal": GOAL_INSIDE})


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    found = [c for s in result["searches"] for c in s["claims"] if "inside" in c]
    share = float(np.mean([c["inside"] for c in found])) if found else math.nan
    return {**result, "inside_share": share, "goal_met": bool(found and share >= GOAL_INSIDE)}


def claim_rows(search: dict[str, Any]) -> list[list[str]]:
    """One row per confirmed claim of a search: what it is, its reported speedup and interval, its fresh speedups,
    and whether the fresh test speedup is inside the interval."""
    return [[c["kind"], str(c["number"]), c["algorithms"] or "–", ", ".join(f"{b:g}" for b in c["budgets"]),
             f"{fmt(c['speedup'], '.2f')}x [{fmt(c['ci'][0], '.2f')}–{fmt(c['ci'][1], '.2f')}]",
             f"{fmt(c.get('fresh_speedup_test'), '.2f')}x", f"{fmt(c.get('fresh_speedup_val'), '.2f')}x",
             "yes" if c.get("inside") else "no"]
            for c in search["claims"]]


def render(result: dict[str, Any]) -> str:
    lines = [
        "Every confirmed claim of a search (recipe curves and front points whose bootstrap interval over "
        "seeds is above 1, chosen on validation) retrained with seeds the search never used, next to the "
        "baseline with the same fresh seeds, and scored on test. *Inside*: the fresh test speedup lies in "
        "the interval the search reported. Goal: ≥ 80 % inside.",
        "",
    ]
    for s in result["searches"]:
        lines += [f"**{s['space']}** (`{s['run_dir']}`): {s['verdict']}",
                  "",
                  f"Confirmation stage: {fmt(100 * s['confirm_share'], '.0f')} % of the search's training time.",
                  ""]
        if not s["claims"]:
            lines += ["No confirmed claim to replicate.", ""]
            continue
        lines.append(md_table(["claim", "trial", "algorithms", "budgets", "reported speedup [95 % CI] (val)",
                               "fresh (test)", "fresh (val)", "inside"], claim_rows(s)))
        h = s.get("headline") or {}
        if h.get("number") is not None:
            lines += ["", f"Headline (trial {h['number']}): reported {fmt(h['speedup'], '.2f')}x "
                          f"[{fmt(h['ci'][0], '.2f')}–{fmt(h['ci'][1], '.2f')}], fresh seeds on test "
                          f"{fmt(h['fresh_speedup_test'], '.2f')}x."]
        lines.append("")
    if result.get("note"):
        lines += [f"Note: {result['note']}", ""]
    share = result.get("inside_share", math.nan)
    met = "met" if result.get("goal_met") else "not met"
    lines.append(f"**Inside the reported interval: {fmt(100 * share, '.0f')} % of the confirmed speedups "
                 f"(goal ≥ {100 * GOAL_INSIDE:.0f} %: {met}).**")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", nargs="*", help="finished search run directories (default: search digits now)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="digits only")
    p.add_argument("--note", help="conditions worth knowing (e.g. a search that shared its machine), shown as is")
    args = p.parse_args(argv)
    result = run(quick=args.quick, runs=args.runs, seeds=args.seeds)
    if args.note:
        result["note"] = args.note
    save_result(NAME, result)
    print(render(result))


if __name__ == "__main__":
    main()
