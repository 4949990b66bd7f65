"""Shared fixtures: a tiny digits recipe that trains in about a second on one CPU thread, the CLI run in this
process, and the session's shared local Ray (with the helpers of tests that start a Ray of their own)."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from bench.private_ray import kill_ray
from recipesearch.recipe import Recipe, recipe_from_dict


def make_recipe(algorithms: dict[str, dict[str, Any]] | None = None, **overrides: Any) -> Recipe:
    """A small digits recipe; keyword overrides replace top-level fields (nested dicts are merged)."""
    base: dict[str, Any] = {
        "model": {"name": "cnn", "width": 8},
        "data": {"name": "digits"},
        "optimizer": {"name": "sgd", "lr": 0.2, "momentum": 0.9, "weight_decay": 5e-4},
        "schedule": {"name": "cosine", "warmup_epochs": 0.2},
        "max_duration": 1,
        "batch_size": 32,
        "seed": 0,
        "threads": 1,
        "device": "cpu",
        "algorithms": algorithms or {},
    }
    for key, value in overrides.items():
        # A new model name means a new model: its options must not inherit the tiny CNN's width.
        if key == "model" and "name" in value:
            base[key] = value
        elif isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    if "schedule" not in overrides:  # a shorter run keeps its warmup within the run (longer is refused)
        base["schedule"]["warmup_epochs"] = min(base["schedule"]["warmup_epochs"], base["max_duration"])
    return recipe_from_dict(base)


def call_cli(capsys, *args: str) -> tuple[int | str | None, str, str]:
    """``recipesearch ARGS`` run in this process (no interpreter start, for commands that end quickly: refusals,
    bad input, reports): (exit code, stdout, stderr). SystemExit from argparse counts too."""
    from recipesearch.cli import main

    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` (10-30 s) or ``system`` (30-150 s: Ray clusters, kill -9 cycles, process groups;
    ``make test-system``) run first, in their collection order, the rest after them. pytest-xdist hands tests
    out in this order, and with ``--dist worksteal`` (the Makefile's) a worker that runs out takes queued tests
    from the other: the short tests fill in around the long ones instead of one worker finishing a queue of
    long tests alone at the end (with the default ``--dist load`` one worker once ran 270 tests, slow ones
    queued on it, 227 s after the other had finished its 1896)."""
    items.sort(key=lambda item: not (item.get_closest_marker("slow") or item.get_closest_marker("system")))


@pytest.fixture(autouse=True, scope="session")
def _decode_cache_in_tmp(tmp_path_factory):
    """imagefolder's decode cache (``$RECIPESEARCH_CACHE``) in a folder of this session, never the user's:
    set in the environment so Ray workers and CLI subprocesses started by the tests inherit it."""
    import os

    os.environ["RECIPESEARCH_CACHE"] = str(tmp_path_factory.mktemp("decoded"))


@pytest.fixture
def tiny_recipe():
    """Factory fixture: ``tiny_recipe({"mixup": {"alpha": 0.2}}, max_duration=2)``."""
    return make_recipe


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """``user_module(source, name=None) -> module name``: a module of a user's own in a folder on sys.path (as
    a module beside a space file is), under a name unique to the test; forgotten again afterwards."""
    import sys
    import textwrap

    folder = tmp_path / "usercode"
    folder.mkdir(exist_ok=True)
    monkeypatch.syspath_prepend(str(folder))
    names: list[str] = []

    def write(source: str, name: str | None = None) -> str:
        name = name or f"user_{tmp_path.name.replace('-', '_')}_{len(names)}"
        (folder / f"{name}.py").write_text(textwrap.dedent(source))
        names.append(name)
        return name

    yield write
    for name in names:
        sys.modules.pop(name, None)


# -- Ray: the session's shared local Ray, and what tests that start their own use -----------------------------

def free_port(host: str = "127.0.0.2") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


RAY = str(Path(sys.executable).with_name("ray"))
HEAD_IP, WORKER_IP = "127.0.0.2", "127.0.0.3"
# Ray's settings for every Ray the suite starts (the shared one, ``ray_env``'s, the loopback cluster), beside
# RAY_TMPDIR, which each gets its own:
RAY_SETTINGS = {
    "RAY_AUTH_MODE": "disabled",  # loopback only: no token to manage
    "RAY_USAGE_STATS_ENABLED": "0",
    # Workers at this process's priority, as the CLI's own local Ray starts them (engine/ray_tune.py). Ray's
    # default (workers at nice +15) starves the trials of a test's own ray.init and of `ray start` clusters
    # beside busy processes of our priority, such as the suite's other xdist worker: beside two such processes
    # the data-parallel checkpoint test took 145 s, not 45 s.
    "RAY_worker_niceness": "0",
    # No idle workers started ahead of demand: a raylet starts one per CPU when it starts, and more when a driver
    # connects, each importing Ray (~0.5 s of CPU) to be unused by a search's trials (started for its job, with
    # its runtime env). On 2 busy cores they only took CPU from the tests beside them.
    "RAY_enable_worker_prestart": "0",
    "RAY_prestart_worker_first_driver": "0",
}


def _ray_start(args: list[str], env: dict[str, str], cpus: int = 1) -> None:
    r = subprocess.run([RAY, "start", "--disable-usage-stats", f"--num-cpus={cpus}", *args], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.fixture(scope="session")
def shared_ray():
    """One local Ray (head 127.0.0.2, 2 CPUs) for the searches of this test process that need "a Ray" and none
    of their own: ``run_cli([..., *shared_ray.args], env=shared_ray.env)``, ``args`` being ``--address`` and its
    address. Joining it spares each search the start and stop of a local Ray (~5 s of its ~15 s on this
    machine). Tests that kill Ray's processes, set Ray's own settings, or check how a search starts its local
    Ray keep ``ray_env``.

    Started on first use, once per pytest(-xdist) process; ended by pid at the session's end, as ``ray_env`` does."""
    from types import SimpleNamespace

    tmp = tempfile.mkdtemp(prefix="rs", dir="/tmp")  # short: Ray's socket paths must stay < 108 chars
    env = {**os.environ, **RAY_SETTINGS, "RAY_TMPDIR": tmp}
    # Unmarked, whatever an in-process search of this process left in its environment: a search's start stops
    # the processes marked with a driver that is gone (engine/ray_orphans.py), never a joined cluster's.
    env.pop("RECIPESEARCH_RAY_OWNER", None)
    address = f"{HEAD_IP}:{free_port(HEAD_IP)}"
    try:
        _ray_start(["--head", f"--node-ip-address={HEAD_IP}", f"--port={address.rsplit(':', 1)[1]}",
                    "--include-dashboard=false"], env, cpus=2)
        yield SimpleNamespace(address=address, args=["--address", address], env=env, marker=tmp)
    finally:
        kill_ray(tmp, grace=3)
        subprocess.run(["rm", "-rf", tmp], check=False)


@pytest.fixture
def shared_ray_here(shared_ray, monkeypatch):
    """``shared_ray`` for a search that joins it from this process (``call_cli``, ``search(address=...)``): its
    settings in this process's environment for the test, where the driver's Ray reads them. No interpreter start
    and imports of a driver of its own (~5 s of CPU): for searches that are not killed."""
    for key in ("RAY_AUTH_MODE", "RAY_TMPDIR", "RAY_USAGE_STATS_ENABLED"):
        monkeypatch.setenv(key, shared_ray.env[key])
    return shared_ray
