"""A two-node Ray cluster on this machine (head 127.0.0.2, worker 127.0.0.3) runs a search via --address."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import optuna
import pandas as pd
import pytest

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_search_on_a_two_node_loopback_cluster(tmp_path, write_space, ray_env, run_cli, loopback_cluster):
    # One CPU per node (the loopback_cluster fixture, ended by pid afterwards): two trials at a time need both.
    address = loopback_cluster.address
    # The study in a database outside the run dir, as a cluster would share one (--storage).
    out, db = tmp_path / "run", f"sqlite:///{tmp_path / 'shared.db'}"
    r = run_cli(["search", str(write_space(trials=6)), "--out", str(out), "--address", address,
                 "--storage", db, "--quiet", "--no-report"], env=ray_env)
    assert r.returncode == 0, r.stdout + r.stderr

    assert not (out / "study.db").exists()
    trials = optuna.load_study(study_name="tiny", storage=db).get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE"] * 6
    assert {t.user_attrs["node"] for t in trials} == {loopback_cluster.head, loopback_cluster.worker}
    assert len(pd.read_csv(out / "trials.csv")) == len(trials)
    meta = json.loads((out / "run.json").read_text())
    assert meta["ray_address"] == address and meta["cluster"]["nodes"] == 2 and meta["storage"] == db
    # the driver only disconnected: the cluster is still up for the next search
    status = subprocess.run([loopback_cluster.ray, "status", f"--address={address}"], env=ray_env,
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr


# ~50 s on an idle machine; the 300 s default is too tight when the 2 cores are shared with a search.
@pytest.mark.timeout(900)
def test_losing_the_worker_node_mid_trial_retries_the_trial_and_the_search_completes(
        tmp_path, write_space, ray_env, run_cli, load_run_study, loopback_cluster, wait_for_trials):
    import time

    import yaml

    # Trials of 3-10 s on an idle machine (30-60 epochs), two at a time: one on each node.
    space = write_space(trials=6)
    spec = yaml.safe_load(space.read_text())
    spec["base"]["max_duration"] = 60
    space.write_text(yaml.safe_dump(spec, sort_keys=False))
    out, log = tmp_path / "run", tmp_path / "search.log"
    proc = subprocess.Popen([sys.executable, "-m", "recipesearch", "search", str(space), "--out", str(out),
                             "--address", loopback_cluster.address, "--no-report"], env=ray_env,
                            cwd=Path(__file__).parents[2], stdout=log.open("w"), stderr=subprocess.STDOUT)
    # Once a trial finished on the worker node its actor is warm there and takes the next trial at once:
    # wait for that, then for a trial in flight, and take the node down (every process of it, SIGKILL).
    wait_for_trials(proc, out, log, "trial on the worker node",
                    lambda trials: any(t.user_attrs.get("node") == loopback_cluster.worker for t in trials)
                    and any(t.state.name == "RUNNING" for t in trials), every=0.2)
    time.sleep(0.5)
    loopback_cluster.kill_worker_node()
    assert proc.wait(timeout=300) == 0, log.read_text()
    printed = log.read_text()

    trials = load_run_study(out).get_trials()
    # Each trial the node took down ran again: Tune restarted it, or (when the restart too was placed on
    # the dead node before Ray knew it was gone) the loop queued it again as a new trial.
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    assert len(complete) == 6, printed
    rerun_of = {t.user_attrs.get("requeued_from") for t in trials}
    for t in trials:
        if t.state.name != "COMPLETE":
            assert t.state.name == "FAIL" and t.user_attrs["worker_lost"] and t.number in rerun_of, printed
    retried = [t for t in complete if t.user_attrs.get("retries")]
    assert retried, printed
    assert all(t.user_attrs["node"] == loopback_cluster.head for t in retried)
    reasons = [t.user_attrs.get("retry_reason") or t.user_attrs.get("error") for t in trials
               if t.user_attrs.get("retries")]
    assert all(r.startswith(("worker lost", "worker crashed")) for r in reasons), reasons
    assert ("running it again (retry 1)" in printed or "queued again" in printed) and "Traceback" not in printed
    assert len(pd.read_csv(out / "trials.csv")) == len(trials)
