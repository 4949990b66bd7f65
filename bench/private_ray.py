"""A search under a Ray of its own, told apart from everybody else's by a private ``RAY_TMPDIR`` (the marker):
its processes (trial workers, a node's processes), ending them, a loopback cluster's ``ray`` command and port,
and the study of a run directory. Shared by the crash cycles and node-loss benchmarks, which kill such searches.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def ray_workers(marker: str) -> list[int]:
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


def _own_resource_tracker(entry: Path) -> bool:
    """This process's multiprocessing resource tracker (started by a torch.multiprocessing spawn after RAY_TMPDIR
    was set, as a test does): no Ray process, it lives as long as this process and ignores SIGTERM."""
    try:
        ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        return ppid == os.getpid() and b"multiprocessing.resource_tracker" in (entry / "cmdline").read_bytes()
    except (OSError, ValueError, IndexError):
        return False


def ray_pids(marker: str) -> list[int]:
    """Every process whose command line or environment mentions ``marker`` (our RAY_TMPDIR), this one and its
    resource tracker excepted. The environment too: Ray's agents rename themselves (``ray::DashboardAgent``) but
    inherit RAY_TMPDIR."""
    needle = marker.encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            found = needle in (entry / "cmdline").read_bytes() or needle in (entry / "environ").read_bytes()
        except OSError:
            continue
        if found and not _own_resource_tracker(entry):
            pids.append(int(entry.name))
    return pids


def kill_ray(marker: str, grace: float = 2.0) -> None:
    """End every process under ``marker``: SIGTERM, then SIGKILL for what is left after ``grace`` seconds, then
    wait (5 s at most) until none is left. Each wait ends as soon as none is left."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        for pid in ray_pids(marker):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while ray_pids(marker) and time.monotonic() < deadline:
            time.sleep(0.1)


def node_pids(marker: str, ip: str) -> list[int]:
    """Processes of our cluster (``marker``: its RAY_TMPDIR) that belong to the node at ``ip``: those with the
    node's address on their command line (raylet, agents), and their descendants (the trial workers, whose
    command line Ray rewrites to ``ray::ImplicitFunc...``)."""
    ours = ray_pids(marker)
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


def ray_cli(args: list[str], env: dict[str, str]) -> None:
    """Run the ``ray`` command beside this Python (start a head or a worker node) or raise with its error."""
    ray = str(Path(sys.executable).with_name("ray"))
    r = subprocess.run([ray, *args], env=env, capture_output=True, text=True, timeout=180)
    if r.returncode:
        raise RuntimeError(f"ray {' '.join(args)} failed: {r.stderr.strip()[-500:]}")


def free_port(host: str) -> int:
    """A port free on ``host`` now (for the loopback cluster's head)."""
    import socket

    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def study_of(out: Path, name: str) -> Any:
    """The Optuna study ``name`` of the run directory ``out``."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.load_study(study_name=name, storage=f"sqlite:///{out / 'study.db'}")


def space_name(space: Path) -> str:
    """The name of the search space in ``space`` (its study's name)."""
    from recipesearch.space import load_space

    return load_space(space).name
