"""Long trials survive: a trial checkpoints through Ray Tune every ``checkpoint_minutes``; killed after a
checkpoint (its worker SIGKILLed, the whole search kill -9ed; its node lost: test_cluster.py) it goes on from
there, and ends bit-identical to the uninterrupted run of its recipe (CPU),
with ``resumes`` 1 and every step trained once.

Kept short: digits, a tiny CNN, checkpoints every few tenths of a second (fractional minutes).
"""
from __future__ import annotations

import json

import pytest

from tests.engine.resumed_checks import check_resumed, checkpoint_files, checkpointing_space

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_a_worker_killed_after_a_checkpoint_is_retried_from_it(tmp_path, write_space, shared_ray, run_cli,
                                                                load_run_study, trial_faults):
    out = tmp_path / "run"
    faults = trial_faults({"kind": "sigkill", "trial": 1, "after_checkpoint": 2, "once": str(tmp_path / "struck")})
    space = checkpointing_space(write_space, epochs=6, minutes=0.002, trials=3, concurrency=1)  # every 0.12 s
    r = run_cli(["search", str(space), "--out", str(out), "--no-report", "--plugin", faults, *shared_ray.args],
                env=shared_ray.env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "struck").exists()  # killed after its second checkpoint reached Tune
    trials = load_run_study(out).get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE"] * 3
    struck = trials[1]
    assert struck.user_attrs["retries"] == 1 and "running it again (retry 1)" in r.stdout
    check_resumed(struck, trials)
    assert all("resumes" not in t.user_attrs for t in (trials[0], trials[2]))
    assert checkpoint_files(out) == []  # finished trials leave no checkpoint behind
    meta = json.loads((out / "run.json").read_text())
    assert meta["checkpoint_minutes"] == 0.002


# The whole search kill -9ed after a checkpoint, then --resume: in the Ray scenario of tests/engine/test_resume.py
# (test_kill_9_mid_search_and_in_confirmation_then_resume), which shares its search with the other kill tests.


# Losing the worker node mid-trial (the trial goes on from its checkpoint): tests/engine/test_cluster.py, on the
# cluster of its search via --address.
