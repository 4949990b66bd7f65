"""Reliability: a search killed with SIGKILL at random moments, resumed each time, until it completes.

Each cycle starts ``recipesearch search SPACE --out DIR [--resume]`` (the real CLI, local Ray in a private
temp dir), lets it finish 1 to 3 more trials (so every cycle makes progress) and a random 0-4 s more (so
the kill lands in the middle of trials), and kills the driver with SIGKILL. Five seconds later it counts the Ray trial workers still training (orphans: a killed driver's
workers must not keep training), ends them, and goes on with ``--resume``. A last resume runs to the end.
Then, over the whole history:

- completed trials lost: a trial COMPLETE before a kill that is not COMPLETE, or has other values, after;
- trials run twice: two finished trials of the same run (stage, params, seed index);
- study vs trials.csv: the same trials, states and values;
- compute wasted per kill: the training time of trials interrupted by the kill (their start to the kill).

    python -m bench.crash_cycles [--cycles 10] [--quick]     # quick: 3 cycles of a smaller search
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

NAME = "crash_cycles"
TITLE = "Reliability: SIGKILL at random moments, then --resume (crash cycles)"
DIGITS = ROOT / "search_spaces/digits.yaml"


def _ray_workers(marker: str) -> list[int]:
    """PIDs of Ray trial workers started under our private RAY_TMPDIR (``ray::`` processes that train)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes()
            env = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in env and (b"ImplicitFunc" in cmd or b"trainable" in cmd):
            pids.append(int(entry.name))
    return pids


def _all_ray(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker.encode() in (entry / "environ").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def _kill_all(marker: str) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in _all_ray(marker):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(2)


def _study(out: Path, name: str) -> Any:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.load_study(study_name=name, storage=f"sqlite:///{out / 'study.db'}")


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


def cycle_search(space: Path, out: Path, cycles: int, trials: int | None = None, seed: int = 0,
                 max_extra: float = 4.0, timeout: float = 300.0) -> dict[str, Any]:
    """Kill and resume a search ``cycles`` times, then let it finish; returns the measurements."""
    from recipesearch.engine import study as st
    from recipesearch.space import load_space

    rng = random.Random(seed)
    name = load_space(space).name
    marker = tempfile.mkdtemp(prefix="rscc", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": marker, "RAY_USAGE_STATS_ENABLED": "0"}
    cmd = [sys.executable, "-m", "recipesearch", "search", str(space), "--out", str(out), "--quiet", "--no-report"]
    cmd += ["--trials", str(trials)] if trials else []
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
            time.sleep(5)
            orphans = len(_ray_workers(marker))
            _kill_all(marker)
            trials_now = _study(out, name).get_trials()
            running = [t for t in trials_now if t.state.name == "RUNNING" and t.datetime_start]
            wasted = sum(max(0.0, (killed_at - t.datetime_start).total_seconds()) for t in running)
            done = _completed(trials_now)
            lost += sum(1 for n, v in before_all.items() if done.get(n) != v)
            before_all = done
            kills.append({"cycle": i, "after_s": round(wait, 1), "completed": len(done), "in_flight": len(running),
                          "wasted_seconds": round(wasted, 2), "orphans_after_5s": orphans})
        final = subprocess.run(cmd + ["--resume"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    finally:
        _kill_all(marker)
        shutil.rmtree(marker, ignore_errors=True)
    trials_end = _study(out, name).get_trials()
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
            "orphans": sum(k["orphans_after_5s"] for k in kills)}


def run(quick: bool = False, cycles: int | None = None) -> dict[str, Any]:
    env = environment()
    out = Path(tempfile.mkdtemp(prefix="crash-cycles-")) / "run"
    n = cycles or (3 if quick else 10)
    result = cycle_search(DIGITS, out, n, trials=20 if quick else 30, seed=0)
    shutil.rmtree(out.parent, ignore_errors=True)
    return {"name": NAME, "quick": quick, "environment": env, "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "space": str(DIGITS.relative_to(ROOT)), **result}


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
        f"| Ray workers still training 5 s after a kill | {result['orphans']} | 0 |",
        f"| final resume | exit {result['final_returncode']} {result.get('final_error') or ''} | exit 0 |",
        "",
        f"**{'All goals met.' if ok else 'Goals not met.'}** Completed trials at the end: {result['completed']}.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cycles", type=int)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    result = run(quick=args.quick, cycles=args.cycles)
    save_result(NAME, result)
    print(render(result))
    print(json.dumps({k: v for k, v in result.items() if k not in ("environment", "kills")}, default=str))


if __name__ == "__main__":
    main()
