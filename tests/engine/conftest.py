"""Search fixtures: tiny digits spaces (trials of ~0.2-0.6 s), Ray isolated per test, a two-node loopback cluster,
and faults injected into trials. (The session's shared Ray, for searches that only need a Ray, is tests/conftest.py's
``shared_ray``.)

Ray here always stays on loopback and in a temp dir of its own (``RAY_TMPDIR``), so a test can find and
end exactly the Ray processes it started (``bench.private_ray.kill_ray``) without touching anyone else's
Ray.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.private_ray import kill_ray, ray_pids
from tests.conftest import HEAD_IP, RAY, RAY_SETTINGS, WORKER_IP, _ray_start, free_port

REPO = Path(__file__).resolve().parents[2]

# A base recipe that trains one epoch of digits in ~0.3 s on one thread.
TINY_BASE: dict[str, Any] = {
    "model": {"name": "cnn", "width": 8},
    "data": {"name": "digits"},
    "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9, "weight_decay": 5.0e-4},
    "schedule": {"name": "cosine", "warmup_epochs": 0.2},
    "max_duration": 2,
    "batch_size": 64,
    "device": "cpu",
}


def tiny_space(**overrides: Any) -> dict[str, Any]:
    """A small space: budgets 0.5 and 1 (1-2 epochs), LR 0.5x-2x, label smoothing on/off; selects on test,
    one seed per baseline run, no confirmation stage (the shipped defaults are val, 3 seeds, confirm)."""
    space: dict[str, Any] = {
        "name": "tiny",
        "base": TINY_BASE,
        "budgets": [0.5, 1],
        "trials": 8,
        "concurrency": 2,
        "threads_per_trial": 1,
        "resources": {"cpus": 1},
        "sampler": {"name": "tpe", "seed": 0},
        "hparams": {"optimizer.lr": {"scale": [0.5, 2]}},
        "algorithms": {"label_smoothing": {"smoothing": {"range": [0.05, 0.2]}}},
        # The loop's mechanics with one run per baseline and no confirmation stage; tests of seeds,
        # validation selection and confirmation (test_stages.py) turn them on.
        "metric_split": "test",
        "baseline": {"seeds": 1},
        "confirm": False,
    }
    space.update(overrides)
    return space


@pytest.fixture
def make_space():
    """``make_space(**overrides) -> SearchSpace`` of the tiny space, loaded from its YAML text."""
    from recipesearch.space import loads_space

    def make(**overrides: Any):
        return loads_space(yaml.safe_dump(tiny_space(**overrides), sort_keys=False), source="tiny.yaml")

    return make


@pytest.fixture
def write_space(tmp_path):
    """``write_space(**overrides) -> Path`` of a tiny space YAML file."""

    def write(name: str = "space.yaml", **overrides: Any) -> Path:
        path = tmp_path / name
        path.write_text(yaml.safe_dump(tiny_space(**overrides), sort_keys=False))
        return path

    return write


@pytest.fixture
def ray_env(monkeypatch):
    """Environment for a test that starts Ray: auth off (loopback), a private temp dir, cleaned up after."""
    import ray

    tmp = tempfile.mkdtemp(prefix="rs", dir="/tmp")  # short: Ray's socket paths must stay < 108 chars
    for var, value in {**RAY_SETTINGS, "RAY_TMPDIR": tmp}.items():
        monkeypatch.setenv(var, value)
    env = dict(os.environ)
    yield env
    if ray.is_initialized():
        ray.shutdown()
    kill_ray(tmp)
    subprocess.run(["rm", "-rf", tmp], check=False)


def _run_cli(args: list[str], env: dict[str, str] | None = None, timeout: float = 240,
             **kwargs: Any) -> subprocess.CompletedProcess:
    """``python -m recipesearch ARGS`` in a subprocess (how a user runs it)."""
    return subprocess.run([sys.executable, "-m", "recipesearch", *args], cwd=REPO, env=env, timeout=timeout,
                          capture_output=True, text=True, **kwargs)


def _study(run_dir: Path, name: str = "tiny"):
    import optuna

    return optuna.load_study(study_name=name, storage=f"sqlite:///{run_dir / 'study.db'}")


@pytest.fixture
def run_cli():
    return _run_cli


@pytest.fixture
def load_run_study():
    """``load_run_study(run_dir, name="tiny") -> optuna.Study`` (with optuna.load_study, as a user would)."""
    return _study


def _wait_for_trials(proc: subprocess.Popen, out: Path, log: Path, what: str, reached: Any, timeout: float = 240,
                     every: float = 0.1) -> list[Any]:
    """Poll the study of the search ``proc`` runs into ``out`` until ``reached(trials)``; its trials then. Fails
    with the search's ``log`` if the search ends first or ``timeout`` passes (before its study exists: no trials)."""
    deadline = time.monotonic() + timeout
    study = None  # loaded once: a load costs ~40 ms of CPU (the storage's setup), a read of its trials ~1 ms
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        try:
            study = study or _study(out)
            trials = study.get_trials()
        except Exception:  # noqa: BLE001 - the study is not created yet
            trials = []
        if reached(trials):
            return trials
        time.sleep(every)
    pytest.fail(f"no {what} within {timeout:g} s:\n{log.read_text()}")


@pytest.fixture
def wait_for_trials():
    """``wait_for_trials(proc, out, log, what, reached, timeout=240, every=0.1) -> trials``: a search running in a
    subprocess, watched through its study until ``reached(trials)`` holds."""
    return _wait_for_trials


@pytest.fixture
def ray_kit():
    """Helpers for tests that manage Ray processes themselves: free_port, ray_pids, kill_ray."""
    from types import SimpleNamespace

    return SimpleNamespace(free_port=free_port, ray_pids=ray_pids, kill_ray=kill_ray)


@pytest.fixture
def loopback_cluster(ray_env):
    """A two-node Ray cluster on this machine, one CPU per node: head 127.0.0.2, worker node 127.0.0.3, both in
    the test's private RAY_TMPDIR. ``.address`` is what ``--address`` takes; ``.kill_worker_node()`` SIGKILLs
    every process of the worker node (raylet, agents, trial workers) as a lost machine would.

    Ended afterwards by pid (``ray stop`` would end every Ray on this machine, other users' too), and checked
    to be gone."""
    from types import SimpleNamespace

    from bench.private_ray import node_pids

    marker = ray_env["RAY_TMPDIR"]
    port = free_port(HEAD_IP)
    address = f"{HEAD_IP}:{port}"

    def kill_worker_node() -> list[int]:
        victims = node_pids(marker, WORKER_IP)  # its raylet, agents and workers
        assert victims
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        return victims

    # The head's GCS declares a node dead after health_check_failure_threshold missed checks, one every
    # health_check_period_ms: 5 x 3 s by default, which a node-loss test spent waiting. Checks every second
    # (each allowed 2 s, 5 misses) find the killed node in ~5 s and still tolerate a raylet slowed by load.
    env = {**ray_env, "RAY_health_check_period_ms": "1000", "RAY_health_check_timeout_ms": "2000",
           "RAY_health_check_failure_threshold": "5"}
    try:
        _ray_start(["--head", f"--node-ip-address={HEAD_IP}", f"--port={port}", "--include-dashboard=false"], env)
        _ray_start([f"--address={address}", f"--node-ip-address={WORKER_IP}"], env)
        yield SimpleNamespace(address=address, marker=marker, head=HEAD_IP, worker=WORKER_IP, ray=RAY,
                              kill_worker_node=kill_worker_node)
    finally:
        kill_ray(marker, grace=3)  # a cluster that is thrown away: its exit need not be clean
    assert not ray_pids(marker)


@pytest.fixture
def trial_faults(tmp_path):
    """``trial_faults(*specs) -> module name``: faults injected into a search's trials as user code. Writes a
    copy of ``trial_faults.py`` beside the test's space file that installs ``specs`` (``{"kind": "sigkill",
    "trial": 1, ...}``, see that module) at the trials' fault points (``recipesearch/engine/faults.py``); the test
    passes the name with ``--plugin NAME`` or ``plugins=[NAME]``, and the search ships it to every trial.

    Afterwards the hooks leave this process (a search run here imported them too), and so does the plugin: the
    process's plugin list has no public way out (a user's process ends with its search), and a later search in
    this process would otherwise ship these faults to its trials."""
    from recipesearch import plugins

    source = Path(__file__).with_name("trial_faults.py").read_text()
    names: list[str] = []

    def write(*specs: dict[str, Any]) -> str:
        name = f"faults_{re.sub(r'[^A-Za-z0-9_]', '_', tmp_path.name)}_{len(names)}"
        (tmp_path / f"{name}.py").write_text(f"{source}\n\ninstall({json.dumps(list(specs))!r})\n")
        names.append(name)
        return name

    yield write
    for name in names:
        module = sys.modules.pop(name, None)
        if module is not None:
            module.uninstall()
        plugins._PLUGINS.pop(name, None)
