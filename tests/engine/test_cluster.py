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
RAY = str(Path(sys.executable).with_name("ray"))


def _ray_start(args: list[str], env: dict[str, str]) -> None:
    r = subprocess.run([RAY, "start", "--disable-usage-stats", "--num-cpus=1", *args], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_search_on_a_two_node_loopback_cluster(tmp_path, write_space, ray_env, run_cli, ray_kit):
    port = ray_kit.free_port()
    address = f"127.0.0.2:{port}"
    try:
        # One CPU per node: two trials at a time need both nodes.
        _ray_start(["--head", "--node-ip-address=127.0.0.2", f"--port={port}", "--include-dashboard=false"], ray_env)
        _ray_start([f"--address={address}", "--node-ip-address=127.0.0.3"], ray_env)
        # The study in a database outside the run dir, as a cluster would share one (--storage).
        out, db = tmp_path / "run", f"sqlite:///{tmp_path / 'shared.db'}"
        r = run_cli(["search", str(write_space(trials=6)), "--out", str(out), "--address", address,
                     "--storage", db, "--quiet", "--no-report"], env=ray_env)
        assert r.returncode == 0, r.stdout + r.stderr

        assert not (out / "study.db").exists()
        trials = optuna.load_study(study_name="tiny", storage=db).get_trials()
        assert [t.state.name for t in trials] == ["COMPLETE"] * 6
        assert {t.user_attrs["node"] for t in trials} == {"127.0.0.2", "127.0.0.3"}
        assert len(pd.read_csv(out / "trials.csv")) == 6
        meta = json.loads((out / "run.json").read_text())
        assert meta["ray_address"] == address and meta["cluster"]["nodes"] == 2 and meta["storage"] == db
        # the driver only disconnected: the cluster is still up for the next search
        status = subprocess.run([RAY, "status", f"--address={address}"], env=ray_env, capture_output=True,
                                text=True, timeout=60)
        assert status.returncode == 0, status.stderr
    finally:
        # `ray stop` would end every Ray on this machine (other users' too): end ours, found by RAY_TMPDIR.
        ray_kit.kill_ray_processes(ray_env["RAY_TMPDIR"], grace=10)
    assert not ray_kit.ray_pids(ray_env["RAY_TMPDIR"])
