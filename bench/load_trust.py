"""Trust under load: a CPU hog during the search, the claims retrained with fresh seeds on an idle machine.

Each space is searched twice: once with a CPU hog (one process of this benchmark spinning on a core, bounded
in time, on this machine only) that starts when the baseline stage has finished and stops as the
confirmation stage starts, so the early baseline ran on an idle machine and the proposals on a busy one, as
in §6's Fashion-MNIST search; and once without it (the control). Every claim of each search is then
retrained with fresh seeds on the idle machine through ``recipesearch replicate --claims all`` and scored on
test. Two sets of claims are scored against the same fresh runs:

- *paired*: what the search reports, speedups against the baseline the confirmation stage re-ran beside the
  candidates (engine/confirm.py);
- *early baseline*: what the search would have claimed against its baseline stage alone (the frontier of
  the same trials without the paired baseline's runs).

*Inside*: the fresh test speedup lies in the interval the search reported. Goal: >= 80 % of the paired claims
of the searches under load inside.

    python -m bench.load_trust              # digits and Fashion-MNIST (hours on 2 CPU cores)
    python -m bench.load_trust --quick      # digits only (~15 min)
    python -m bench.load_trust --spaces fashion_mnist                    # one half; the other's results are kept
    python -m bench.load_trust --spaces fashion_mnist --stamp 20261127-0330  # go on with an interrupted run

An interrupted benchmark goes on with ``--stamp`` (its run directories' stamp): a finished search is read back,
an unfinished one resumed (``recipesearch search --resume``; the hog starts again if it resumes in the search
stage), and a replication resumed or skipped when done. Results of spaces not run this time are kept.
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.common import ROOT, environment, fmt, load_result, md_table, save_result, write_json

NAME = "load_trust"
TITLE = "Trust under load: a CPU hog during the search, claims retrained on an idle machine"
GOAL_INSIDE = 0.80
SPACES = {"digits": ROOT / "search_spaces/digits.yaml", "fashion_mnist": ROOT / "search_spaces/fashion_mnist.yaml"}
HOG_LIMIT_S = 3 * 3600  # the hog never outlives this, whatever happens to the benchmark
POLL_S = 0.5
SEEDS = 3


def _stages(out: Path) -> pd.DataFrame | None:
    """(stage, state) of every trial of the search in ``out`` so far; None before its study exists."""
    import optuna

    db = out / "study.db"
    if not db.is_file():
        return None
    try:
        storage = optuna.storages.RDBStorage(f"sqlite:///{db}")
        names = optuna.get_all_study_names(storage)
        if not names:
            return None
        trials = optuna.load_study(study_name=names[0], storage=storage).get_trials(deepcopy=False)
    except Exception:  # noqa: BLE001 - the search is writing it: look again at the next poll
        return None
    return pd.DataFrame([{"stage": t.user_attrs.get("stage"), "state": t.state.name} for t in trials])


class Hog:
    """One process spinning on a core from ``start`` to ``stop`` (or HOG_LIMIT_S at most)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.started = self.stopped = math.nan

    def start(self) -> None:
        code = f"import time\nend = time.time() + {HOG_LIMIT_S}\nwhile time.time() < end:\n    pass\n"
        self.proc = subprocess.Popen([sys.executable, "-c", code])
        self.started = time.time()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            self.stopped = time.time()


def _watch(out: Path, search: subprocess.Popen, hog: Hog) -> None:
    """Start the hog once the baseline stage has finished, stop it when the confirmation starts."""
    while search.poll() is None:
        df = _stages(out)
        if df is not None and len(df):
            early = df[df["stage"].isin(["tune", "baseline"])]
            if hog.proc is None and len(early) and early["state"].isin(["COMPLETE", "FAIL", "PRUNED"]).all() \
                    and (df["stage"] == "search").any():
                hog.start()
            if hog.proc is not None and (df["stage"] == "confirm").any():
                hog.stop()
                return
        time.sleep(POLL_S)


def _record(out: Path) -> Path:
    """Where a finished search's benchmark record is kept, beside its run directory."""
    return out.parent / f"{out.name}.bench.json"


def _status(run_dir: Path) -> str | None:
    """run.json's status ("finished", "running", ...); None when there is none yet."""
    try:
        return json.loads((run_dir / "run.json").read_text()).get("status")
    except (OSError, ValueError):
        return None


def search(space: Path, out: Path, with_hog: bool) -> dict[str, Any]:
    """Run (or resume, or read back) one search; its record is written once it has finished."""
    if _record(out).is_file():
        return json.loads(_record(out).read_text())
    resume = out.exists()
    cmd = [sys.executable, "-m", "recipesearch", "search", str(space), "--out", str(out), "--quiet", "--no-report",
           *(["--resume"] if resume else [])]
    start = time.time()
    hog = Hog()
    with open(out.parent / f"{out.name}.log", "a" if resume else "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        watcher = threading.Thread(target=_watch, args=(out, proc, hog), daemon=True) if with_hog else None
        try:
            if watcher is not None:
                watcher.start()
            proc.wait()
        finally:
            hog.stop()
            if proc.poll() is None:
                proc.kill()
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed with exit {proc.returncode}; see {out}.log")
    # a resumed search's time is its sessions' (run.json), the hog's only this attempt's
    sessions = json.loads((out / "run.json").read_text())["sessions"]
    wall = sum(pd.Timestamp(x["end_time"]).timestamp() - pd.Timestamp(x["start_time"]).timestamp()
               for x in sessions if x.get("end_time")) if resume else time.time() - start
    record = {"run_dir": str(out), "hog": with_hog, "wall_seconds": wall, "resumed": resume,
              "hog_seconds": hog.stopped - hog.started if with_hog else 0.0,
              "hog_started_after_s": hog.started - start if with_hog else math.nan}
    write_json(_record(out), record)
    return record


def replicate_idle(run_dir: Path, seeds: int) -> None:
    """Retrain the claims with fresh seeds; an interrupted replication is resumed, a finished one kept."""
    if _status(run_dir / "replication") == "finished":
        return
    resume = ["--resume"] if (run_dir / "replication" / "run.json").is_file() else []
    cmd = [sys.executable, "-m", "recipesearch", "replicate", str(run_dir), "--claims", "all", "--seeds", str(seeds),
           "--quiet", "--no-report", *resume]
    with open(run_dir.parent / f"{run_dir.name}-replicate.log", "a" if resume else "w") as log:
        subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, check=True)


def _baseline_shift(shift: pd.DataFrame | None) -> dict[str, float]:
    """Per budget: the early baseline's mean train_seconds / the paired baseline's, read off the frontier's own
    comparison of the two (``Frontier.baseline_shift``; None when the paired baseline is not in use)."""
    if shift is None or shift.empty:
        return {}
    return {f"{r.budget:g}": float(r.early_seconds / r.paired_seconds) for r in shift.itertuples()
            if r.paired_seconds > 0}


def score(run_dir: Path) -> dict[str, Any]:
    """The search's claims against the paired and the early baseline, scored on the same fresh runs."""
    from recipesearch.analysis.frontier import Objectives, frontier
    from recipesearch.analysis.replication import claims_of, inside_share, score_claims
    from recipesearch.engine.replicate import fresh_runs, read_source

    source = read_source(run_dir)
    fresh = fresh_runs(pd.read_csv(run_dir / "replication" / "trials.csv"), source.arm_numbers, source.space.seed)
    trials = source.trials
    paired_rows = (trials["stage"] == "confirm") & trials["is_baseline"].astype(bool)
    early = frontier(trials[~paired_rows], Objectives.from_run_meta(source.meta))
    out: dict[str, Any] = {"verdict": source.frontier.headline.verdict, "early_verdict": early.headline.verdict,
                           "baseline_shift": _baseline_shift(source.frontier.baseline_shift), "paired_runs": int(paired_rows.sum())}
    for label, f in (("paired", source.frontier), ("early", early)):
        claims = claims_of(f, "confirmed")
        # a claim on a recipe the replication did not retrain (no curve, no front point) cannot be scored here
        scored = score_claims(claims, fresh)
        out[label] = scored.to_dict(orient="records")
        out[f"{label}_inside_share"] = inside_share(scored)
    return out


def run(quick: bool = False, seeds: int = SEEDS, spaces: list[str] | None = None,
        stamp: str | None = None) -> dict[str, Any]:
    env = environment()
    names = spaces or (["digits"] if quick else list(SPACES))
    stamp = stamp or time.strftime("%Y%m%d-%H%M%S")
    print(f"run directories: runs/bench-load-<space>-<hog|control>-{stamp} (go on later with --stamp {stamp})",
          flush=True)
    searches = []
    for name in names:
        for with_hog in (True, False):
            out = ROOT / "runs" / f"bench-load-{name}-{'hog' if with_hog else 'control'}-{stamp}"
            searches.append({"space": name, "condition": "hog" if with_hog else "control",
                             **search(SPACES[name], out, with_hog)})
    for s in searches:  # after every search: the fresh seeds run on an idle machine
        start = time.time()
        replicate_idle(Path(s["run_dir"]), seeds)
        s["replicate_seconds"] = time.time() - start
        s.update(score(Path(s["run_dir"])))
    return summarise({"name": NAME, "quick": quick, "seeds": seeds, "environment": env, "searches": searches,
                      "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "goal": GOAL_INSIDE})


def merge(earlier: dict[str, Any] | None, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with the searches of ``earlier`` on spaces it did not run (one half of the benchmark at a time)."""
    if not earlier or earlier.get("seeds") != result["seeds"]:
        return result
    ran = {s["space"] for s in result["searches"]}
    kept = [s for s in earlier.get("searches", []) if s["space"] not in ran]
    merged = {**result, "searches": kept + result["searches"], "quick": result["quick"] and earlier.get("quick", True)}
    return summarise(merged)


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    def share(condition: str, label: str) -> float:
        rows = [c for s in result["searches"] if s["condition"] == condition for c in s.get(label, [])
                if np.isfinite(c["reported_ci_low"])]
        return float(np.mean([c["inside"] for c in rows])) if rows else math.nan

    out = {**result}
    for condition in ("hog", "control"):
        for label in ("paired", "early"):
            out[f"{condition}_{label}_inside"] = share(condition, label)
    out["goal_met"] = bool(np.isfinite(out["hog_paired_inside"]) and out["hog_paired_inside"] >= GOAL_INSIDE)
    return out


def _claims_cell(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "none"
    return "; ".join(f"{r['kind']} {r['number']}: {fmt(r['reported_speedup'], '.2f')}x "
                     f"[{fmt(r['reported_ci_low'], '.2f')}–{fmt(r['reported_ci_high'], '.2f')}] → "
                     f"{fmt(r['fresh_speedup'], '.2f')}x {'in' if r['inside'] else 'out'}" for r in rows)


def render(result: dict[str, Any]) -> str:
    lines = [
        "Each space searched twice: with a CPU hog (one process spinning on a core) from the end of the baseline "
        "stage to the start of the confirmation, and without (control). Every claim then retrained with "
        f"{result['seeds']} fresh seeds on the idle machine (`recipesearch replicate --claims all`) and scored on "
        "test. *Paired*: the search's claims, against the baseline re-run beside the candidates. *Early baseline*: "
        "what the same trials would have claimed against the baseline stage alone. *Inside*: the fresh test "
        "speedup lies in the reported interval. Goal: ≥ 80 % of the paired claims under load inside.",
        "",
    ]
    rows = []
    for s in result["searches"]:
        shift = ", ".join(f"{b}: {v:.2f}" for b, v in s.get("baseline_shift", {}).items()) or "–"
        rows.append([s["space"], s["condition"], f"{fmt(s['wall_seconds'] / 60, '.1f')} min",
                     f"{fmt(s['hog_seconds'] / 60, '.1f')} min" if s["hog"] else "–", shift,
                     _claims_cell(s.get("paired", [])), fmt(100 * s.get("paired_inside_share", math.nan), ".0f"),
                     _claims_cell(s.get("early", [])), fmt(100 * s.get("early_inside_share", math.nan), ".0f")])
    lines.append(md_table(["space", "search", "search time", "hog", "early / paired baseline time per budget",
                           "paired claims → fresh (test)", "inside %", "early-baseline claims → fresh (test)",
                           "inside %"], rows))
    notes = [f"- {s['space']}, {s['condition']}: {s['note']}" for s in result["searches"] if s.get("note")]
    if notes:  # what else ran beside a search (a record's note, written by hand)
        lines += ["", *notes]
    lines += ["", f"Under load: paired claims inside {fmt(100 * result['hog_paired_inside'], '.0f')} %, early-baseline "
                  f"claims inside {fmt(100 * result['hog_early_inside'], '.0f')} %. Control: "
                  f"{fmt(100 * result['control_paired_inside'], '.0f')} % and "
                  f"{fmt(100 * result['control_early_inside'], '.0f')} %.",
              "", f"**Goal (≥ 80 % of the paired claims under load inside): "
                  f"{'met' if result.get('goal_met') else 'not met'}.**"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="digits only")
    p.add_argument("--seeds", type=int, default=SEEDS)
    p.add_argument("--spaces", nargs="*", choices=sorted(SPACES))
    p.add_argument("--stamp", help="go on with the run directories of this stamp (an interrupted benchmark)")
    args = p.parse_args(argv)
    result = merge(load_result(NAME), run(quick=args.quick, seeds=args.seeds, spaces=args.spaces, stamp=args.stamp))
    save_result(NAME, result)
    print(render(result))


if __name__ == "__main__":
    main()
