"""Trials whose worker process dies (killed by the kernel, by Ray's memory monitor, or with its node) are run
again by Ray Tune (``max_failures`` in the space); one that dies on every attempt fails with the reason, the
search goes on, and ``--resume`` runs it again. A trial killed after a checkpoint goes on from it. A trial
failing for its own reason is never retried.

The deaths are injected as user code (the ``trial_faults`` fixture, a ``--plugin`` module): the worker SIGKILLs
itself, or allocates memory until Ray's memory monitor kills it. The searches join the session's shared Ray
(``shared_ray``), but for the memory monitor's, which sets that Ray's threshold. The drivers run in the test's
process: only trial workers die here.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import call_cli
from tests.engine.resumed_checks import check_resumed, checkpoint_files, checkpointing_space

pytestmark = [pytest.mark.ray, pytest.mark.system]


def _trials(out: Path, load_run_study) -> tuple[list, pd.DataFrame]:
    return load_run_study(out).get_trials(), pd.read_csv(out / "trials.csv")


def test_a_worker_lost_once_is_retried_and_one_lost_on_every_attempt_fails_until_resume_runs_it_again(
        tmp_path, write_space, shared_ray_here, capsys, load_run_study, trial_faults):
    """One search (and its resumes) for what were four tests, each a search of its own:

    1) a trial whose worker dies once runs again, from its checkpoint, and completes (trial 1: SIGKILLed right
       after its second checkpoint reached Tune, first attempt only): ``resumes`` 1, every step trained once,
       bit-identical to the uncut run of its recipe (was test_checkpoint_resume.py's);
    2) a worker lost on every attempt fails its trial, the search goes on, and ``--resume`` runs it again (trial 2:
       SIGKILLed at every start; ``max_failures: 1``), and then has nothing more to do;
    3) a trial failing for its own reason (trial 3: it diverges) fails once, with its reason: it is not retried,
       not a lost worker, and a resume does not run it again.

    Checkpoints every 0.12 s of 6-epoch trials; finished trials leave none behind. The drivers run in this
    process (none is killed: only trial workers die).
    """
    space, out = checkpointing_space(write_space, epochs=6, minutes=0.002, trials=4, concurrency=1,
                                     max_failures=1), tmp_path / "run"
    faults = trial_faults({"kind": "sigkill", "trial": 1, "after_checkpoint": 2, "once": str(tmp_path / "struck")},
                          {"kind": "sigkill", "trial": 2}, {"kind": "diverge", "trial": 3})
    ray_args = shared_ray_here.args
    code, stdout, stderr = call_cli(capsys, "search", str(space), "--out", str(out), "--no-report", "--plugin", faults,
                                    *ray_args)
    assert code == 0, stdout + stderr  # the search went on past the lost trial
    assert (tmp_path / "struck").exists()  # the fault did strike, after the second checkpoint reached Tune
    trials, df = _trials(out, load_run_study)
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE", "FAIL", "FAIL"]
    # 1) died once: run again (retry 1) from its checkpoint, completed
    retried = trials[1]
    assert retried.user_attrs["retries"] == 1 and "worker_lost" not in retried.user_attrs, retried.user_attrs
    assert retried.user_attrs["retry_reason"].startswith(("worker crashed", "out of memory"))
    assert any("trial 1: " in line and "running it again (retry 1)" in line for line in stdout.splitlines())
    assert all("retries" not in t.user_attrs for t in (trials[0], trials[3]))
    check_resumed(retried, trials)
    assert all("resumes" not in t.user_attrs for t in (trials[0], trials[2], trials[3]))
    assert json.loads((out / "run.json").read_text())["checkpoint_minutes"] == 0.002
    # trials.csv: retries of the two struck trials only
    assert df.set_index("number")["retries"].fillna(0).tolist() == [0, 1, 2, 0]
    # 2) lost on every attempt: two deaths, the first attempt's (Tune ran it again) and the retry's, past
    # max_failures: 1
    lost = trials[2]
    assert lost.user_attrs["worker_lost"] is True and lost.user_attrs["retries"] == 2
    assert lost.user_attrs["error"].startswith(("worker crashed", "out of memory")), lost.user_attrs["error"]
    assert "Traceback" not in stdout + stderr
    # 3) its own reason: one attempt, its reason, no retry
    own = trials[3]
    assert "diverged: loss is" in own.user_attrs["error"], own.user_attrs
    assert "worker_lost" not in own.user_attrs and "retry_reason" not in own.user_attrs
    assert not [line for line in stdout.splitlines() if "trial 3: " in line and "running it again" in line]

    resume = ["search", str(space), "--out", str(out), "--resume", "--no-report", *ray_args]
    code, stdout, stderr = call_cli(capsys, *resume)
    assert code == 0, stdout + stderr
    trials, df = _trials(out, load_run_study)
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE", "FAIL", "FAIL", "COMPLETE"]
    rerun = trials[4]
    assert rerun.user_attrs["requeued_from"] == 2 and rerun.params == lost.params
    assert df["number"].tolist() == [0, 1, 2, 3, 4] and df.loc[4, "requeued_from"] == 2
    assert checkpoint_files(out) == []  # finished trials leave no checkpoint behind
    # the budget counts the re-run in place of the lost trial: a further resume has nothing to do
    code, stdout, stderr = call_cli(capsys, *resume)
    assert code == 0 and len(load_run_study(out).get_trials()) == 5, stdout + stderr


def _available_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 2**20
    return 0.0


def _total_gib() -> float:
    return int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0]) / 2**20


def test_a_worker_killed_for_memory_fails_its_trial_with_out_of_memory(tmp_path, write_space, ray_env, capsys,
                                                                      load_run_study, trial_faults, monkeypatch):
    total, available = _total_gib(), _available_gib()
    if available < 10:
        pytest.skip(f"needs 10 GiB of free memory for the memory hog, {available:.1f} GiB available")
    # Ray's memory monitor kills a worker once the node uses more than this share of its memory: set it
    # 4 GiB above what is in use now (room for other processes to move), and let trial 1 allocate up to 8 GiB.
    threshold = min(0.95, (total - available + 4) / total)
    # the driver runs in this process (it is not what dies): its local Ray reads these from our environment
    monkeypatch.setenv("RAY_memory_usage_threshold", f"{threshold:.3f}")
    monkeypatch.setenv("RAY_memory_monitor_refresh_ms", "100")
    out = tmp_path / "run"
    faults = trial_faults({"kind": "allocate", "trial": 1, "gib": 8})
    code, stdout, stderr = call_cli(capsys, "search", str(write_space(trials=3, concurrency=1, max_failures=0)),
                                    "--out", str(out), "--no-report", "--plugin", faults)
    assert code == 0, stdout + stderr
    trials, df = _trials(out, load_run_study)
    errors = [t.user_attrs.get("error") for t in trials]
    assert [t.state.name for t in trials] == ["COMPLETE", "FAIL", "COMPLETE"], errors
    assert trials[1].user_attrs["error"].startswith("out of memory"), trials[1].user_attrs["error"]
    assert trials[1].user_attrs["worker_lost"] is True
    assert "Traceback" not in stdout + stderr
