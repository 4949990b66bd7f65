"""Node loss: a search on a two-node loopback Ray cluster whose worker node is killed (every process, SIGKILL)
while it trains a trial, ``losses`` times, a fresh node joining each time; the search must complete in the same
run with no trial lost (Ray Tune's ``max_failures`` retries, the loop queueing a run again). Part of the crash
cycles benchmark (bench/crash_cycles.py), which runs it and renders ``render_node_loss`` as its subsection.
"""
from __future__ import annotations

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

from bench.common import ROOT, fmt
from bench.private_ray import free_port, kill_ray, node_pids, ray_cli, space_name, study_of


def lose_nodes(space: Path, out: Path, losses: int, trials: int | None = None, timeout: float = 900.0) -> dict[str, Any]:
    """Run a search on a two-node cluster and take its worker node down ``losses`` times mid-trial."""
    name = space_name(space)
    marker = tempfile.mkdtemp(prefix="rsnl", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": marker, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    port = free_port("127.0.0.2")
    address = f"127.0.0.2:{port}"
    head = ["start", "--disable-usage-stats", "--num-cpus=1", "--head", "--node-ip-address=127.0.0.2",
            f"--port={port}", "--include-dashboard=false"]
    worker = ["start", "--disable-usage-stats", "--num-cpus=1", f"--address={address}", "--node-ip-address=127.0.0.3"]
    cmd = [sys.executable, "-m", "recipesearch", "search", str(space), "--out", str(out), "--address", address,
           "--no-report"] + (["--trials", str(trials)] if trials else [])
    log = out.parent / "node-loss.log"
    events: list[dict[str, Any]] = []
    try:
        ray_cli(head, env)
        ray_cli(worker, env)
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
        t0 = time.monotonic()
        seen_on_worker = 0
        while proc.poll() is None and len(events) < losses and time.monotonic() - t0 < timeout:
            time.sleep(0.3)
            try:
                trials_now = study_of(out, name).get_trials()
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
            in_flight = [t for t in study_of(out, name).get_trials() if t.state.name == "RUNNING" and t.datetime_start]
            events.append({"at_s": round(killed_wall, 1), "in_flight": [t.number for t in in_flight],
                           "started": {t.number: t.datetime_start for t in in_flight}, "killed_at": killed_at})
            time.sleep(5)
            ray_cli(worker, env)  # a replacement node joins
            seen_on_worker = sum(1 for t in study_of(out, name).get_trials() if t.user_attrs.get("node") == "127.0.0.3")
        returncode = proc.wait(timeout=timeout)
    finally:
        kill_ray(marker)
        shutil.rmtree(marker, ignore_errors=True)
    from recipesearch.engine import study as st

    trials_end = study_of(out, name).get_trials()
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


def render_node_loss(nl: dict[str, Any]) -> list[str]:
    """The "Node loss" subsection of the crash cycles section: its table and whether all its goals are met."""
    nl_ok = nl["returncode"] == 0 and nl["failed"] == 0 and nl["retries"] >= nl["losses"] and not nl["tracebacks"]
    return [
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
