"""Reliability: a search killed with SIGKILL at random moments, resumed each time, until it completes.

Each cycle starts ``recipesearch search SPACE --out DIR [--resume]`` (the real CLI, local Ray in a private
temp dir), lets it finish 1 to 3 more trials (so every cycle makes progress) and a random 0-4 s more (so
the kill lands in the middle of trials), and kills the driver with SIGKILL. Five seconds later it counts the
Ray trial workers still training (orphans: a killed driver's workers must not keep training), ends them, and
goes on with ``--resume``. A last resume runs to the end. Then, over the whole history:

- completed trials lost: a trial COMPLETE before a kill that is not COMPLETE, or has other values, after;
- trials run twice: two finished trials of the same run (stage, params, seed index);
- study vs trials.csv: the same trials, states and values;
- compute wasted per kill: the training time of trials interrupted by the kill (their start to the kill);
  with ``--checkpoint-minutes M`` the trials checkpoint every M minutes and a re-run goes on from its
  predecessor's latest checkpoint, so only the time from that checkpoint (the file's mtime in Tune's
  storage) to the kill is wasted; ``resumed``: the re-runs that went on from a checkpoint.

Second part, node loss: the same search on a two-node loopback Ray cluster (head 127.0.0.2 and a worker
node 127.0.0.3, one CPU each, ``--address``); whenever a trial trains on the worker node, every process of
that node is killed with SIGKILL and a fresh worker node joins a few seconds later, ``--losses`` times. The
search must complete in the same run with no trial lost: the trial the node took down runs again
(``max_failures`` in the space, Ray Tune's FailureConfig). Measured: trials retried and failed, completed
trials lost, and the training time the lost attempts had spent.

    python -m bench.crash_cycles [--cycles 10] [--losses 3] [--quick] [--checkpoint-minutes M]
    # quick: 3 cycles, 2 losses, smaller

The node-loss part is in bench/node_loss.py, the Ray process plumbing both use in bench/private_ray.py.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.common import ROOT, environment, fmt, save_result
from bench.node_loss import lose_nodes, render_node_loss
from bench.private_ray import kill_ray, ray_workers, space_name, study_of

NAME = "crash_cycles"
TITLE = "Reliability: SIGKILL at random moments, then --resume (crash cycles)"
DIGITS = ROOT / "search_spaces/digits.yaml"


def _completed(trials: list[Any]) -> dict[int, tuple]:
    return {t.number: tuple(t.values) for t in trials if t.state.name == "COMPLETE"}


def _finished_rows(out: Path) -> int:
    """Trials that finished for real in trials.csv (rewritten after every finished trial): a resume marking
    the killed ones interrupted is no progress. 0 before the file exists."""
    import pandas as pd

    from recipesearch.engine.study import count_finished_rows

    try:
        return count_finished_rows(pd.read_csv(out / "trials.csv", keep_default_na=False))
    except (FileNotFoundError, pd.errors.EmptyDataError, KeyError):
        return 0


def _last_checkpoint(out: Path, number: int) -> datetime | None:
    """When trial ``number``'s latest checkpoint reached Tune's storage (engine/checkpoints.py), or None."""
    from recipesearch.engine.checkpoints import CheckpointStore

    latest = CheckpointStore(out / "ray").latest([number])
    return datetime.fromtimestamp(latest.stat().st_mtime) if latest is not None else None


ORPHAN_WAIT = 5.0  # seconds after a kill at which the trial workers still training count as orphans


def _orphans_after(marker: str, wait: float, until_none: bool = False) -> int:
    """The Ray trial workers under ``marker`` ``wait`` seconds from now; with ``until_none`` the wait ends as soon
    as there are none (0 then; those left at ``wait`` otherwise, as without it)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if until_none and not ray_workers(marker):
            return 0
        time.sleep(0.2)
    return len(ray_workers(marker))


def cycle_search(space: Path, out: Path, cycles: int, trials: int | None = None, seed: int = 0,
                 max_extra: float = 4.0, timeout: float = 300.0,
                 checkpoint_minutes: float | None = None, until_none: bool = False,
                 orphan_wait: float = ORPHAN_WAIT) -> dict[str, Any]:
    """Kill and resume a search ``cycles`` times, then let it finish; returns the measurements.

    ``until_none``: after a kill, stop waiting for the orphan count once no trial worker is left (a test's
    pass/fail is the same: orphans 0 within ``orphan_wait`` s); the bench waits the whole ``ORPHAN_WAIT``. A test
    gives a longer ``orphan_wait``: on a loaded machine Ray may take longer to end a dead driver's workers."""
    from recipesearch.engine import study as st

    rng = random.Random(seed)
    name = space_name(space)
    marker = tempfile.mkdtemp(prefix="rscc", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": marker, "RAY_USAGE_STATS_ENABLED": "0"}
    cmd = [sys.executable, "-m", "recipesearch", "search", str(space), "--out", str(out), "--quiet", "--no-report"]
    cmd += ["--trials", str(trials)] if trials else []
    cmd += ["--checkpoint-minutes", str(checkpoint_minutes)] if checkpoint_minutes is not None else []
    kills: list[dict[str, Any]] = []
    lost, before_all = 0, {}
    try:
        for i in range(cycles):
            proc = subprocess.Popen(cmd + (["--resume"] if i else []), cwd=ROOT, env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            started, target = time.monotonic(), _finished_rows(out) + rng.randint(1, 3)
            while proc.poll() is None and _finished_rows(out) < target and time.monotonic() - started < timeout:
                time.sleep(0.2)
            wait = rng.uniform(0, max_extra)
            time.sleep(wait)
            if proc.poll() is not None:
                break  # finished before it could be killed
            os.kill(proc.pid, signal.SIGKILL)
            killed_at = datetime.now()
            proc.wait()
            orphans = _orphans_after(marker, orphan_wait, until_none=until_none)
            kill_ray(marker)
            trials_now = study_of(out, name).get_trials()
            running = [t for t in trials_now if t.state.name == "RUNNING" and t.datetime_start]
            # lost: from the trial's start, or from its latest checkpoint (its re-run goes on from there)
            since = [max(t.datetime_start, _last_checkpoint(out, t.number) or t.datetime_start) for t in running]
            wasted = sum(max(0.0, (killed_at - s).total_seconds()) for s in since)
            done = _completed(trials_now)
            lost += sum(1 for n, v in before_all.items() if done.get(n) != v)
            before_all = done
            kills.append({"cycle": i, "after_s": round(wait, 1), "completed": len(done), "in_flight": len(running),
                          "wasted_seconds": round(wasted, 2), "orphans_after_5s": orphans})
        final = subprocess.run(cmd + ["--resume"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    finally:
        kill_ray(marker)
        shutil.rmtree(marker, ignore_errors=True)
    trials_end = study_of(out, name).get_trials()
    done = _completed(trials_end)
    lost += sum(1 for n, v in before_all.items() if done.get(n) != v)
    finished = [t for t in trials_end if st.is_finished(t)]
    keys = [(st.stage_of(t), st.run_key(st.trial_params(t), st.seed_index(t))) for t in finished]
    import pandas as pd

    csv = pd.read_csv(out / "trials.csv")
    agree = (csv["number"].tolist() == [t.number for t in trials_end]
             and csv["state"].tolist() == [t.state.name for t in trials_end])
    return {"cycles": len(kills), "kills": kills, "final_returncode": final.returncode,
            "final_error": final.stderr.strip().splitlines()[-1] if final.returncode and final.stderr else "",
            "completed": len(done), "lost": lost, "run_twice": len(keys) - len(set(keys)),
            "study_and_csv_agree": bool(agree),
            "left_running_or_waiting": sum(t.state.name in ("RUNNING", "WAITING") for t in trials_end),
            "wasted_seconds_per_kill": (sum(k["wasted_seconds"] for k in kills) / len(kills)) if kills else 0.0,
            "orphans": sum(k["orphans_after_5s"] for k in kills), "checkpoint_minutes": checkpoint_minutes,
            "resumed": sum(1 for t in trials_end if t.user_attrs.get("resumes"))}


CHECKPOINT_ARM_MINUTES = 0.01  # 0.6 s: several checkpoints in a digits trial of 1-4 s


def run(quick: bool = False, cycles: int | None = None, losses: int | None = None,
        checkpoint_minutes: float | None = None) -> dict[str, Any]:
    env = environment()
    out = Path(tempfile.mkdtemp(prefix="crash-cycles-")) / "run"
    n = cycles or (3 if quick else 10)
    result = cycle_search(DIGITS, out, n, trials=20 if quick else 30, seed=0, checkpoint_minutes=checkpoint_minutes)
    shutil.rmtree(out.parent, ignore_errors=True)
    # The same kills (same seed: same moments) with checkpoints every few steps: what resuming saves
    out = Path(tempfile.mkdtemp(prefix="crash-cycles-ckpt-")) / "run"
    checkpointed = cycle_search(DIGITS, out, n, trials=20 if quick else 30, seed=0,
                                checkpoint_minutes=CHECKPOINT_ARM_MINUTES)
    shutil.rmtree(out.parent, ignore_errors=True)
    out = Path(tempfile.mkdtemp(prefix="node-loss-")) / "run"
    node_loss = lose_nodes(DIGITS, out, losses or (2 if quick else 3), trials=20 if quick else 30)
    shutil.rmtree(out.parent, ignore_errors=True)
    from bench.damage_corpus import run_corpus

    return {"name": NAME, "quick": quick, "environment": env, "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "space": str(DIGITS.relative_to(ROOT)), **result, "checkpointed": checkpointed, "node_loss": node_loss,
            "corpus": run_corpus()}


def render(result: dict[str, Any]) -> str:
    ok = (result["lost"] == 0 and result["run_twice"] == 0 and result["study_and_csv_agree"]
          and result["orphans"] == 0 and result["final_returncode"] == 0)
    lines = [
        f"`{result['space']}` killed with SIGKILL {result['cycles']} times at random moments, resumed each time "
        "(the real CLI on a local Ray), then run to the end.",
        "",
        "| measure | result | goal |", "|---|---|---|",
        f"| completed trials lost | {result['lost']} | 0 |",
        f"| trials run twice | {result['run_twice']} | 0 |",
        f"| study and trials.csv agree | {'yes' if result['study_and_csv_agree'] else 'no'} | yes |",
        f"| trials left RUNNING/WAITING at the end | {result['left_running_or_waiting']} | 0 |",
        f"| training time wasted per kill (s) | {fmt(result['wasted_seconds_per_kill'], '.1f')} | – |",
        *([f"| checkpoints every (minutes) | {result['checkpoint_minutes'] or 'the space default (10)'} | – |",
           f"| re-runs that went on from a checkpoint | {result.get('resumed', 0)} | – |"]
          if "checkpoint_minutes" in result else []),  # results saved before checkpoints existed have neither
        f"| Ray workers still training 5 s after a kill | {result['orphans']} | 0 |",
        f"| final resume | exit {result['final_returncode']} {result.get('final_error') or ''} | exit 0 |",
        "",
        f"**{'All goals met.' if ok else 'Goals not met.'}** Completed trials at the end: {result['completed']}.",
    ]
    ck = result.get("checkpointed")
    if ck:
        def row(name: str, key: str, spec: str = "") -> str:
            return f"| {name} | {fmt(result[key], spec) if spec else result[key]} | {fmt(ck[key], spec) if spec else ck[key]} |"

        lines += [
            "", "### Checkpoints", "",
            f"The same search killed at the same moments (same seed), once with the space's checkpoint interval "
            f"({result.get('checkpoint_minutes') or 'default 10'} min: a digits trial of a few seconds never reaches "
            f"it, so a killed trial starts again from step 0) and once with checkpoints every "
            f"{ck['checkpoint_minutes']:g} min ({ck['checkpoint_minutes'] * 60:.1f} s), so the re-run of a killed "
            "trial goes on from its latest checkpoint (`--resume`). Wasted per kill: from the trial's start (a fresh "
            "worker's imports and decoding included), or its latest checkpoint, to the kill; the checkpointed figure "
            "can undercount where a worker still wrote a checkpoint in the instant after the kill.",
            "", "| measure | no checkpoint reached | checkpoints |", "|---|---|---|",
            row("training time wasted per kill (s)", "wasted_seconds_per_kill", ".2f"),
            row("re-runs that went on from a checkpoint", "resumed"),
            row("completed trials lost", "lost"), row("trials run twice", "run_twice"),
            row("study and trials.csv agree", "study_and_csv_agree"), row("final resume exit code", "final_returncode"),
        ]
    if result.get("node_loss"):
        lines += render_node_loss(result["node_loss"])
    if result.get("corpus"):
        from bench.damage_corpus import render_corpus

        lines += ["", render_corpus(result["corpus"])]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cycles", type=int)
    p.add_argument("--losses", type=int)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--checkpoint-minutes", type=float, help="the searches' checkpoint interval (default: the space's)")
    args = p.parse_args(argv)
    result = run(quick=args.quick, cycles=args.cycles, losses=args.losses, checkpoint_minutes=args.checkpoint_minutes)
    save_result(NAME, result)
    print(render(result))
    print(json.dumps({k: v for k, v in result.items() if k not in ("environment", "kills")}, default=str))


if __name__ == "__main__":
    main()
