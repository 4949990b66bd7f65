"""Faults for the reliability tests, injected from outside as user code: the ``trial_faults`` fixture
(tests/engine/conftest.py) copies this file beside the space file under a name of the test's own, with a last
line installing the test's faults, and the test names that module with ``--plugin`` / ``plugins=[...]``. The
search imports it in every trial process (``recipesearch/engine/shipping.py``), where its hooks wait at the
trial's fault points (``recipesearch/engine/faults.py``).

Self-contained on purpose: the copy is the only file Ray ships to its workers (no ``tests`` package there).

    sigkill     trial (rank r of a multi-worker trial) SIGKILLs its worker at its start, or right after its
                k-th checkpoint of this attempt reached Tune; ``once``: the first attempt only (a marker file
                remembers it across worker processes)
    allocate    the same, but the worker grows its memory until Ray's memory monitor (or the kernel) kills it
    hold        every trial marks FOLDER/<number> at its start and waits (at most ``timeout`` s) until ``parties``
                trials have: concurrent trials surely overlap
    pause_rungs after each rung report (the scheduler's answer in), count it in FILE and sleep (the first
                ``pauses`` reports, but for the first ``after`` of them): a test can kill -9 the search while a
                trial sits in a rung
    group_timeout  a multi-worker trial's rank 0 waits only ``seconds`` for its group to form (the first attempt
                only, ``once``), the configured timeout on the later ones: a peer killed before the group forms
                costs its first attempt seconds, not the timeout its retry needs for a slow peer's start
    diverge     trial ``trial`` trains at an LR of 1e30 (its recipe changed at its start): it fails for its own
                reason, a result, not a lost worker
    fake_cuda   a trial Ray gave a (fake) GPU records "cuda" and Ray's ids but trains on the CPU, on machines
                whose Ray was given GPUs they do not have (``ray.init(num_gpus=4)``)
"""
from __future__ import annotations

import json
import os
import signal
import time
from typing import Any

from recipesearch.engine import faults


def _rank(config: dict[str, Any]) -> int:
    return int((config.get("rendezvous") or {}).get("rank", 0))


def _first_time(once: str | None) -> bool:
    if not once:
        return True
    if os.path.exists(once):
        return False
    open(once, "w").close()
    return True


def sigkill(trial: int, rank: int = 0, after_checkpoint: int | None = None, once: str | None = None,
            allocate_gib: float = 0) -> faults.Hook:
    point = "start" if after_checkpoint is None else "checkpoint"

    def hook(at: str, config: dict[str, Any], info: dict[str, Any]) -> None:
        if at != point or int(config.get("number", -1)) != trial or _rank(config) != rank:
            return
        if after_checkpoint is not None and info.get("checkpoints") != after_checkpoint:
            return
        if not _first_time(once):
            return
        if allocate_gib:  # grow until Ray's memory monitor (or the kernel) kills us
            import torch

            hog = []
            for _ in range(int(allocate_gib * 8)):
                hog.append(torch.ones(2**24, dtype=torch.float64))  # 128 MiB, touched
                time.sleep(0.05)
            time.sleep(60)
        os.kill(os.getpid(), signal.SIGKILL)

    return hook


def allocate(trial: int, gib: float, **kwargs: Any) -> faults.Hook:
    return sigkill(trial, allocate_gib=gib, **kwargs)


def hold(folder: str, parties: int, timeout: float = 60) -> faults.Hook:
    def hook(at: str, config: dict[str, Any], info: dict[str, Any]) -> None:
        if at != "start":
            return
        os.makedirs(folder, exist_ok=True)
        open(os.path.join(folder, str(config.get("number"))), "w").close()
        deadline = time.monotonic() + timeout
        while len(os.listdir(folder)) < parties and time.monotonic() < deadline:
            time.sleep(0.1)

    return hook


def pause_rungs(file: str, sleep: float = 1, pauses: int = 1_000_000, after: int = 0) -> faults.Hook:
    def hook(at: str, config: dict[str, Any], info: dict[str, Any]) -> None:
        if at != "rung":
            return
        try:
            count = int(open(file).read() or 0)
        except (OSError, ValueError):
            count = 0
        with open(file, "w") as f:
            f.write(str(count + 1))
        if after <= count < pauses:  # a --resume imports the recorded plugin again: its reports need not pause
            time.sleep(sleep)

    return hook


def group_timeout(trial: int, seconds: float, once: str) -> faults.Hook:
    from recipesearch.engine.ranks import TIMEOUT_ENV

    configured = os.environ.get(TIMEOUT_ENV)

    def hook(at: str, config: dict[str, Any], info: dict[str, Any]) -> None:
        # rank 0's "start" comes before it reads the timeout (engine/ranks.py run_workers), in this process
        if at != "start" or int(config.get("number", -1)) != trial or _rank(config) != 0:
            return
        if _first_time(once):
            os.environ[TIMEOUT_ENV] = f"{seconds:g}"
        elif configured is None:  # a retry in the same (reused) process: back to what the search configured
            os.environ.pop(TIMEOUT_ENV, None)
        else:
            os.environ[TIMEOUT_ENV] = configured

    return hook


def diverge(trial: int) -> faults.Hook:
    def hook(at: str, config: dict[str, Any], info: dict[str, Any]) -> dict[str, Any] | None:
        if at != "start" or int(config.get("number", -1)) != trial:
            return None
        recipe = config["recipe"]
        return {**config, "recipe": {**recipe, "optimizer": {**recipe["optimizer"], "lr": 1.0e30}}}

    return hook


def fake_cuda() -> faults.Hook:
    def hook(at: str, config: dict[str, Any], info: dict[str, Any]) -> dict[str, Any] | None:
        recipe = config.get("recipe")
        if at != "start" or not isinstance(recipe, dict) or not str(recipe.get("device", "")).startswith("cuda"):
            return None
        return {**config, "recipe": {**recipe, "device": "cpu"}}

    return hook


def rung_time(seconds_per_rung: float) -> faults.Hook:
    """Every rung report says the trial took ``seconds_per_rung`` x its rung: trials that reach a rung tie on time,
    so the scheduler ranks them by accuracy alone (which a fixed seed fixes on CPU), whichever ran faster."""
    def hook(at: str, report: dict[str, Any], info: dict[str, Any]) -> dict[str, Any] | None:
        return {**report, "train_seconds": seconds_per_rung * report["rung"]} if at == "report" else None

    return hook


KINDS = {"rung_time": rung_time, "sigkill": sigkill, "allocate": allocate, "hold": hold, "pause_rungs": pause_rungs,
         "diverge": diverge, "group_timeout": group_timeout, "fake_cuda": fake_cuda}
INSTALLED: list[faults.Hook] = []


def install(specs: str) -> None:
    """``specs``: JSON of ``[{"kind": "sigkill", "trial": 1, ...}, ...]``, the fixture's arguments."""
    for spec in json.loads(specs):
        spec = dict(spec)
        hook = KINDS[spec.pop("kind")](**spec)
        faults.install(hook)
        INSTALLED.append(hook)


def uninstall() -> None:
    while INSTALLED:
        faults.uninstall(INSTALLED.pop())
