"""Reliability: a search killed with SIGKILL at random moments, resumed each time, until it completes.

Each cycle starts ``recipesearch search SPACE --out DIR [--resume]`` (the real CLI, local Ray in a private
temp dir), lets it finish 1 to 3 more trials (so every cycle makes progress) and a random 0-4 s more (so
the kill lands in the middle of trials), and kills the driver with SIGKILL. Five seconds later it counts the Ray trial workers still training (orphans: a killed driver's
workers must not keep training), ends them, and goes on with ``--resume``. A last resume runs to the end.
Then, over the whole history:

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


def _last_checkpoint(out: Path, number: int) -> datetime | None:
    """When trial ``number``'s latest checkpoint reached Tune's storage (engine/checkpoints.py), or None."""
    from recipesearch.engine.checkpoints import CheckpointStore

    latest = CheckpointStore(out / "ray").latest([number])
    return datetime.fromtimestamp(latest.stat().st_mtime) if latest is not None else None


def cycle_search(space: Path, out: Path, cycles: int, trials: int | None = None, seed: int = 0,
                 max_extra: float = 4.0, timeout: float = 300.0,
                 checkpoint_minutes: float | None = None) -> dict[str, Any]:
    """Kill and resume a search ``cycles`` times, then let it finish; returns the measurements."""
    from recipesearch.engine import study as st

    rng = random.Random(seed)
    name = _load_name(space)
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
            time.sleep(5)
            orphans = len(_ray_workers(marker))
            _kill_all(marker)
            trials_now = _study(out, name).get_trials()
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
            "orphans": sum(k["orphans_after_5s"] for k in kills), "checkpoint_minutes": checkpoint_minutes,
            "resumed": sum(1 for t in trials_end if t.user_attrs.get("resumes"))}


def _ray_cli(args: list[str], env: dict[str, str]) -> None:
    ray = str(Path(sys.executable).with_name("ray"))
    r = subprocess.run([ray, *args], env=env, capture_output=True, text=True, timeout=180)
    if r.returncode:
        raise RuntimeError(f"ray {' '.join(args)} failed: {r.stderr.strip()[-500:]}")


def node_pids(marker: str, ip: str) -> list[int]:
    """Processes of our cluster (``marker``: its RAY_TMPDIR) that belong to the node at ``ip``: those with the
    node's address on their command line (raylet, agents), and their descendants (the trial workers, whose
    command line Ray rewrites to ``ray::ImplicitFunc...``)."""
    ours = _all_ray(marker)
    parent = {}
    for pid in ours:
        try:
            parent[pid] = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    node = set()
    for pid in ours:
        try:
            if ip.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                node.add(pid)
        except OSError:
            continue
    grew = True
    while grew:
        before = len(node)
        node |= {pid for pid, ppid in parent.items() if ppid in node}
        grew = len(node) > before
    return sorted(node)


def _free_port(host: str) -> int:
    import socket

    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def lose_nodes(space: Path, out: Path, losses: int, trials: int | None = None, timeout: float = 900.0) -> dict[str, Any]:
    """Run a search on a two-node cluster and take its worker node down ``losses`` times mid-trial."""
    name = _load_name(space)
    marker = tempfile.mkdtemp(prefix="rsnl", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": marker, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    port = _free_port("127.0.0.2")
    address = f"127.0.0.2:{port}"
    head = ["start", "--disable-usage-stats", "--num-cpus=1", "--head", "--node-ip-address=127.0.0.2",
            f"--port={port}", "--include-dashboard=false"]
    worker = ["start", "--disable-usage-stats", "--num-cpus=1", f"--address={address}", "--node-ip-address=127.0.0.3"]
    cmd = [sys.executable, "-m", "recipesearch", "search", str(space), "--out", str(out), "--address", address,
           "--no-report"] + (["--trials", str(trials)] if trials else [])
    log = out.parent / "node-loss.log"
    events: list[dict[str, Any]] = []
    try:
        _ray_cli(head, env)
        _ray_cli(worker, env)
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
        t0 = time.monotonic()
        seen_on_worker = 0
        while proc.poll() is None and len(events) < losses and time.monotonic() - t0 < timeout:
            time.sleep(0.3)
            try:
                trials_now = _study(out, name).get_trials()
            except Exception:  # noqa: BLE001 - not created yet
                continue
            on_worker = sum(1 for t in trials_now if t.user_attrs.get("node") == "127.0.0.3")
            running = [t for t in trials_now if t.state.name == "RUNNING" and t.datetime_start]
            # the worker node's actor is warm once a trial finished there since it (re)joined
            if on_worker <= seen_on_worker or not running:
                continue
            time.sleep(random.Random(len(events)).uniform(0.5, 2.0))
            killed_at, killed_wall = datetime.now(), time.monotonic() - t0
            for pid in node_pids(marker, "127.0.0.3"):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            in_flight = [t for t in _study(out, name).get_trials() if t.state.name == "RUNNING" and t.datetime_start]
            events.append({"at_s": round(killed_wall, 1), "in_flight": [t.number for t in in_flight],
                           "started": {t.number: t.datetime_start for t in in_flight}, "killed_at": killed_at})
            time.sleep(5)
            _ray_cli(worker, env)  # a replacement node joins
            seen_on_worker = sum(1 for t in _study(out, name).get_trials() if t.user_attrs.get("node") == "127.0.0.3")
        returncode = proc.wait(timeout=timeout)
    finally:
        _kill_all(marker)
        shutil.rmtree(marker, ignore_errors=True)
    from recipesearch.engine import study as st

    trials_end = _study(out, name).get_trials()
    rerun = st.rerun_elsewhere(trials_end)
    # A run hit by a loss ends as one trial: COMPLETE after Tune's retries, or a FAIL the loop queued again
    # as a new trial (then its re-run is the run's end); a FAIL nobody re-runs is a failed trial.
    final = [t for t in trials_end if not (t.state.name == "FAIL" and t.number in rerun)]
    hit = [t for t in trials_end if t.user_attrs.get("retries") or t.user_attrs.get("worker_lost")]
    runs_hit = [t for t in final if t.user_attrs.get("retries")]
    wasted = 0.0
    for e in events:  # the lost attempt of each trial the loss hit: from its start to the kill
        for t in hit:
            if t.number in e["started"]:
                wasted += max(0.0, (e["killed_at"] - e["started"][t.number]).total_seconds())
    reasons = {t.user_attrs.get("retry_reason") or (t.user_attrs.get("error") if t.user_attrs.get("worker_lost") else "")
               for t in hit}
    text = log.read_text(errors="replace")
    return {"losses": len(events), "returncode": returncode,
            "completed": sum(t.state.name == "COMPLETE" for t in trials_end),
            "failed": sum(t.state.name == "FAIL" for t in final), "trials": len(final),
            "retried": len(runs_hit), "retries": sum(int(t.user_attrs["retries"]) for t in runs_hit),
            "queued_again": sum(1 for t in trials_end if t.state.name == "FAIL" and t.number in rerun
                                and t.user_attrs.get("worker_lost")),
            "reasons": sorted(r for r in reasons if r),
            "wasted_seconds_per_loss": wasted / len(events) if events else 0.0,
            "tracebacks": text.count("Traceback"),
            "events": [{k: v for k, v in e.items() if k in ("at_s", "in_flight")} for e in events]}


CHECKPOINT_ARM_MINUTES = 0.01  # 0.6 s: several checkpoints in a digits trial of 1-4 s


def _load_name(space: Path) -> str:
    from recipesearch.space import load_space

    return load_space(space).name


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
    nl = result.get("node_loss")
    if nl:
        nl_ok = nl["returncode"] == 0 and nl["failed"] == 0 and nl["retries"] >= nl["losses"] and not nl["tracebacks"]
        lines += [
            "", "### Node loss", "",
            f"The same search (`--trials` as above) on a two-node loopback cluster (`--address`, one CPU per node); "
            f"the worker node killed (every process, SIGKILL) {nl['losses']} times while it trained a trial, a fresh "
            "worker node joining 5 s later. `max_failures: 2` (the default) lets Ray Tune run a lost trial again "
            "(and the loop queue it as a new trial when Tune gives up), within two worker deaths per run.",
            "", "| measure | result | goal |", "|---|---|---|",
            f"| search completed in the same run | exit {nl['returncode']} | exit 0 |",
            f"| worker deaths recorded on trials | {nl['retries']} | ≥ one per loss |",
            f"| runs they hit (a run can be hit again on the replacement node) | {nl['retried']} | – |",
            f"| of them queued again as a new trial (Tune gave up on a restart placed on the dead node) | "
            f"{nl.get('queued_again', 0)} | – |",
            f"| trials failed in the end | {nl['failed']} of {nl['trials']} | 0 |",
            f"| training time lost per node loss (s) | {fmt(nl['wasted_seconds_per_loss'], '.1f')} | – |",
            f"| tracebacks printed | {nl['tracebacks']} | 0 |",
            "", f"Reasons recorded: {'; '.join(nl['reasons']) or '–'}.",
            "", f"**{'All goals met.' if nl_ok else 'Goals not met.'}**",
        ]
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
