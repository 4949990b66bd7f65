"""Long trials survive: a trial checkpoints through Ray Tune every ``checkpoint_minutes``; killed after a
checkpoint (its worker SIGKILLed, the whole search kill -9ed; its node lost: test_cluster.py) it goes on from
there, and ends bit-identical to the uninterrupted run of its recipe (CPU),
with ``resumes`` 1 and every step trained once.

Kept short: digits, a tiny CNN, checkpoints every few tenths of a second (fractional minutes).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def _space(write_space, epochs: float, minutes: float, **overrides):
    from tests.engine.conftest import TINY_BASE

    return write_space(base={**TINY_BASE, "max_duration": epochs}, checkpoint_minutes=minutes, **overrides)


def _uninterrupted(trial):
    """The trial's recipe trained start to end in this process: what a resumed run must equal."""
    from recipesearch.recipe import recipe_from_dict
    from recipesearch.train.loop import fit

    return fit(recipe_from_dict(json.loads(trial.user_attrs["recipe_json"])))


def _checkpoint_files(out: Path) -> list[Path]:
    return sorted((out / "ray").glob("*/trial_*/checkpoint_*/trainer.pt"))


def _check_resumed(trial, trials) -> None:
    alone = _uninterrupted(trial)
    attrs = trial.user_attrs
    assert attrs["resumes"] == 1 and attrs["checkpoints"] >= 1 and attrs["resume_gap_seconds"] > 0, attrs
    assert attrs["steps"] == alone.steps  # every step trained, none twice
    assert trial.values[0] == alone.accuracy  # bit-identical to the run that was never cut (metric_split test)
    # train_seconds sums its segments: per step about what the search's uncut trials took (same tiny CNN, Ray
    # workers under the same load), not a fraction or a multiple. Not against ``alone``: it trains in this test
    # process, beside the other test worker, where a run once took 6x the trial's time. Within the range the uncut
    # ones spanned, widened 3x each way: under the full suite two uncut trials once differed 5x per step.
    uncut = sorted(t.user_attrs["train_seconds"] / t.user_attrs["steps"] for t in trials
                   if t.state.name == "COMPLETE" and not t.user_attrs.get("resumes") and t.user_attrs.get("steps"))
    assert uncut, [t.user_attrs for t in trials]
    assert uncut[0] / 3 < attrs["train_seconds"] / attrs["steps"] < 3 * uncut[-1], (attrs, uncut)


def test_a_worker_killed_after_a_checkpoint_is_retried_from_it(tmp_path, write_space, shared_ray, run_cli,
                                                                load_run_study, trial_faults):
    out = tmp_path / "run"
    faults = trial_faults({"kind": "sigkill", "trial": 1, "after_checkpoint": 2, "once": str(tmp_path / "struck")})
    space = _space(write_space, epochs=6, minutes=0.002, trials=3, concurrency=1)  # every 0.12 s
    r = run_cli(["search", str(space), "--out", str(out), "--no-report", "--plugin", faults, *shared_ray.args],
                env=shared_ray.env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "struck").exists()  # killed after its second checkpoint reached Tune
    trials = load_run_study(out).get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE"] * 3
    struck = trials[1]
    assert struck.user_attrs["retries"] == 1 and "running it again (retry 1)" in r.stdout
    _check_resumed(struck, trials)
    assert all("resumes" not in t.user_attrs for t in (trials[0], trials[2]))
    assert _checkpoint_files(out) == []  # finished trials leave no checkpoint behind
    meta = json.loads((out / "run.json").read_text())
    assert meta["checkpoint_minutes"] == 0.002


# The whole search kill -9ed after a checkpoint, then --resume: in the Ray scenario of tests/engine/test_resume.py
# (test_kill_9_mid_search_and_in_confirmation_then_resume), which shares its search with the other kill tests.


# Losing the worker node mid-trial (the trial goes on from its checkpoint): tests/engine/test_cluster.py, on the
# cluster of its search via --address.
