"""The checkpoint store (a re-run finds its predecessor's latest checkpoint, finished trials leave none), the
``checkpoint_minutes`` setting, and checkpoint/resume with the in-process executor (no Ray)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from recipesearch.engine.checkpoints import CheckpointStore
from recipesearch.train.checkpoint import FILENAME
from tests.conftest import call_cli
from tests.engine.resumed_checks import check_resumed, checkpointing_space, write_hold_plugin

REPO = Path(__file__).resolve().parents[2]


def _put(root: Path, session: str, number: int, index: int) -> Path:
    folder = root / session / f"trial_{number:05d}_abc{index}" / f"checkpoint_{index:06d}"
    folder.mkdir(parents=True)
    (folder / FILENAME).write_bytes(b"x")
    return folder / FILENAME


def test_latest_is_the_newest_checkpoint_of_the_latest_trial_in_the_chain(tmp_path):
    store = CheckpointStore(tmp_path)
    old = _put(tmp_path, "session-0-1", 3, 1)
    assert store.latest([7, 3]) == old  # trial 7 (the re-run of 3) has none yet: 3's
    _put(tmp_path, "session-1-2", 7, 2)
    newest = _put(tmp_path, "session-1-2", 7, 10)  # numbered, not sorted as text
    assert store.latest([7, 3]) == newest
    assert store.latest([8]) is None and CheckpointStore(tmp_path / "missing").latest([3]) is None
    assert store.forget([7, 3]) == 3 and store.latest([7, 3]) is None


def test_rerun_chain_follows_requeued_from():
    import optuna

    from recipesearch.engine import study as st
    from recipesearch.engine.queueing import rerun_chain

    study = optuna.create_study(directions=["maximize", "minimize"])
    for frm in (None, 0, 1):  # 0, then 1 re-runs 0, then 2 re-runs 1
        study.enqueue_trial({"x": 1}, user_attrs={st.REQUEUED_FROM: frm} if frm is not None else {})
        study.ask()
    trials = study.get_trials()
    assert rerun_chain(trials, 1) == [1, 0]
    assert rerun_chain(trials, trials[2].user_attrs[st.REQUEUED_FROM]) == [1, 0]
    assert rerun_chain(trials, None) == []


def test_keep_only_deletes_every_other_trials_checkpoints(tmp_path):
    store = CheckpointStore(tmp_path)
    kept = _put(tmp_path, "session-0-1", 3, 1)
    _put(tmp_path, "session-0-1", 4, 1)
    _put(tmp_path, "session-1-2", 12, 5)  # trial 12: five digits in Tune's folder name too
    assert store.keep_only({3}) == 2 and store.latest([3]) == kept and store.latest([4, 12]) is None
    assert store.keep_only(set()) == 1 and store.latest([3]) is None
    assert CheckpointStore(tmp_path / "missing").keep_only(set()) == 0


def test_the_checkpoints_still_needed_are_the_chains_of_the_queued_re_runs():
    import optuna

    from recipesearch.engine import study as st
    from recipesearch.engine.queueing import checkpoints_still_needed

    study = optuna.create_study(directions=["maximize", "minimize"])
    for frm in (None, 0, None, 2):  # 0; 1 re-ran 0 (finished); 2; 3 re-runs 2 (queued, not started)
        study.enqueue_trial({"x": 1}, user_attrs={st.REQUEUED_FROM: frm} if frm is not None else {})
    for _ in range(3):
        study.tell(study.ask(), [0.9, 1.0])
    assert [t.state.name for t in study.get_trials()] == ["COMPLETE"] * 3 + ["WAITING"]
    assert checkpoints_still_needed(study.get_trials()) == {2}
    study.tell(study.ask(), [0.9, 1.0])
    assert checkpoints_still_needed(study.get_trials()) == set()


def test_checkpoint_minutes_reach_the_trial_config(make_space):
    import optuna

    from recipesearch.engine.loop import SearchLoop

    space = make_space(checkpoint_minutes=0.5)
    assert make_space().checkpoint_minutes == 10.0  # the default
    assert make_space(checkpoint_minutes=0).checkpoint_minutes is None  # 0: off
    storage = optuna.storages.InMemoryStorage()
    study = optuna.create_study(storage=storage, directions=space.directions)
    loop = SearchLoop(space, study, storage, n_trials=space.trials)
    loop.prepare(resuming=False)
    proposal = loop.ask()
    assert proposal.config["checkpoint_seconds"] == 30.0 and proposal.config["resume_of"] == []
    off = space.with_checkpoint_minutes(0)
    assert off.checkpoint_minutes is None and off.hash == space.hash  # operational: not in the hash


@pytest.mark.parametrize("value", [-1, "soon", ".inf"])
def test_a_bad_checkpoint_minutes_is_one_line_exit_2(tmp_path, write_space, capsys, value):
    space = write_space()
    space.write_text(space.read_text() + f"checkpoint_minutes: {value}\n")
    code, _, err = call_cli(capsys, "search", str(space), "--out", str(tmp_path / "run"), "--executor", "inprocess")
    assert code == 2 and "checkpoint_minutes" in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_a_bad_checkpoint_minutes_flag_is_exit_2(tmp_path, write_space, capsys):
    code, _, err = call_cli(capsys, "search", str(write_space()), "--out", str(tmp_path / "run"),
                            "--checkpoint-minutes", "-5")
    assert code == 2 and "--checkpoint-minutes" in err and "Traceback" not in err, err


@pytest.mark.system
def test_inprocess_kill_9_then_resume_goes_on_from_the_checkpoint(tmp_path, write_space, run_cli, load_run_study):
    """The in-process executor: kill -9 while a trial is held right after its first checkpoint (the hold plugin:
    no race with the trial's end), then --resume: the re-run goes on from that checkpoint (resumed once, every
    step trained once, bit-identical to the uncut run), the budget's trials complete, none leaves a checkpoint."""
    space = checkpointing_space(write_space, epochs=4, minutes=0.001, trials=3, concurrency=1)
    mark = write_hold_plugin(tmp_path)
    out, log = tmp_path / "run", tmp_path / "first.log"
    cmd = [sys.executable, "-m", "recipesearch", "search", str(space), "--out", str(out), "--executor", "inprocess",
           "--quiet", "--no-report"]
    proc = subprocess.Popen([*cmd, "--plugin", "hold_first_checkpoint"], cwd=REPO, stdout=log.open("w"),
                            stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while not mark.exists():
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    held = json.loads(mark.read_text())
    assert [t.number for t in load_run_study(out).get_trials() if t.state.name == "RUNNING"] == [held]

    r = run_cli([*cmd[3:], "--resume"])
    assert r.returncode == 0, r.stdout + r.stderr
    trials = load_run_study(out).get_trials()
    rerun = [t for t in trials if t.user_attrs.get("requeued_from") == held]
    assert len(rerun) == 1 and rerun[0].state.name == "COMPLETE", trials
    check_resumed(rerun[0], trials)
    assert len([t for t in trials if t.state.name == "COMPLETE"]) == 3
    assert not list((out / "checkpoints").glob(f"*/trial_*/checkpoint_*/{FILENAME}"))  # finished: deleted
    assert json.loads((out / "run.json").read_text())["checkpoint_minutes"] == 0.001


def test_working_folders_of_dead_processes_are_swept_and_live_ones_kept(tmp_path):
    from recipesearch.engine.checkpoints import WORKING_PREFIX, sweep_orphans, working_folder

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"{WORKING_PREFIX}{int(gone.stdout)}-abc"
    (dead / "current").mkdir(parents=True)
    (dead / "current" / "trainer.pt").write_bytes(b"x" * 100)
    mine = tmp_path / f"{WORKING_PREFIX}{os.getpid()}-def"
    mine.mkdir()
    other = tmp_path / "recipesearch-checkpoint-notapid"  # not one of ours by name: left alone
    other.mkdir()
    assert sweep_orphans(tmp_path) == 1
    assert not dead.exists() and mine.exists() and other.exists()
    # a trial's own folder is named for its process, and goes when it is done
    with working_folder() as work:
        assert Path(work).name.startswith(f"{WORKING_PREFIX}{os.getpid()}-") and Path(work).is_dir()
    assert not Path(work).exists()
