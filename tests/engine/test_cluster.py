"""A two-node Ray cluster on this machine (head 127.0.0.2, worker 127.0.0.3) runs a search via --address."""
from __future__ import annotations

import json
import subprocess

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


# Losing the worker node mid-trial: tests/engine/test_checkpoint_resume.py (its trial goes on from a checkpoint).
