"""recipesearch/rundir.py: the run directory's flags, atomic writes, and trials.csv written and read back."""
from __future__ import annotations

import math
import threading

import pandas as pd
import pytest

from recipesearch.errors import UserError
from recipesearch.rundir import HEAD_COLUMNS, TAIL_COLUMNS, RunDir, RunLog, write_atomic


@pytest.fixture
def make_space():
    """A two-budget digits space; ``budgets=`` changes its content (and hash)."""
    import yaml

    from recipesearch.space import loads_space

    def make(budgets=(0.5, 1)):
        data = {"name": "tiny", "budgets": list(budgets), "trials": 6,
                "base": {"model": {"name": "cnn", "width": 8}, "data": {"name": "digits"}, "max_duration": 1,
                         "device": "cpu"}}
        return loads_space(yaml.safe_dump(data, sort_keys=False), source="tiny.yaml")

    return make


def test_force_starts_a_run_directory_again_and_resume_keeps_it(tmp_path, make_space):
    space = make_space()
    run = RunDir(tmp_path / "run")
    assert not run.prepare(space, resume=False, force=False)
    assert run.space_yaml.read_text() == space.text
    run.trials_csv.write_text("old")
    run.run_json.write_text("{}")
    with pytest.raises(UserError, match="--out: .* is not empty"):
        run.check(space, resume=False, force=False)
    assert run.prepare(space, resume=True, force=False) and run.trials_csv.read_text() == "old"
    assert not run.prepare(space, resume=False, force=True)
    assert sorted(p.name for p in run.root.iterdir()) == ["space.yaml"]


def test_force_never_deletes_a_directory_that_is_not_a_run(tmp_path, make_space):
    (tmp_path / "notes.txt").write_text("precious")
    with pytest.raises(UserError, match="does not look like a search run directory"):
        RunDir(tmp_path).prepare(make_space(), resume=False, force=True)
    assert (tmp_path / "notes.txt").read_text() == "precious"


def test_resume_refuses_another_space(tmp_path, make_space):
    run = RunDir(tmp_path / "run")
    run.prepare(make_space(), resume=False, force=False)
    with pytest.raises(UserError, match="the space differs"):
        run.check(make_space(budgets=[0.25, 1]), resume=True, force=False)


def test_trials_csv_written_and_read_back_as_one_contract(tmp_path):
    run = RunDir(tmp_path)
    rows = [{"number": 1, "state": "FAIL", "is_baseline": False, "budget": 1.0, "algorithms": "mixup+cutout",
             "params_budget": 1.0, "accuracy": None, "train_seconds": None, "error": "diverged"},
            {"number": 0, "state": "COMPLETE", "is_baseline": True, "budget": 0.5, "algorithms": "",
             "params_budget": 0.5, "accuracy": 0.9, "train_seconds": 1.5, "error": ""}]
    columns = [*HEAD_COLUMNS, "params_budget", *TAIL_COLUMNS]
    run.write_trials(pd.DataFrame(rows, columns=columns))
    back = run.read_trials()
    assert back["number"].tolist() == [0, 1]  # sorted by trial number
    assert back["is_baseline"].tolist() == [True, False] and back["is_baseline"].dtype == bool
    assert back["algorithms"].tolist() == ["", "cutout+mixup"]  # one canonical spelling
    assert back.loc[1, "error"] == "diverged" and back.loc[0, "error"] == ""
    assert back.loc[0, "accuracy"] == 0.9 and math.isnan(back.loc[1, "accuracy"])
    assert set(HEAD_COLUMNS + TAIL_COLUMNS) <= set(back.columns)


def test_reading_a_missing_or_broken_run_is_one_line(tmp_path):
    with pytest.raises(UserError, match="no such run directory"):
        RunDir(tmp_path / "nope").read_trials()
    with pytest.raises(UserError, match="no trials.csv"):
        RunDir(tmp_path).read_trials()
    (tmp_path / "trials.csv").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(UserError, match="not a readable CSV"):
        RunDir(tmp_path).read_trials()
    (tmp_path / "run.json").write_text("{broken")
    assert RunDir(tmp_path).read_meta() == {}


def test_an_atomic_write_that_fails_leaves_the_old_file(tmp_path, monkeypatch):
    path = write_atomic(tmp_path / "x.txt", "old\n")
    monkeypatch.setattr("recipesearch.rundir.os.replace", lambda a, b: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        write_atomic(path, "new\n")
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["x.txt"]


def test_run_json_keeps_one_entry_per_session(tmp_path, make_space):
    space, run = make_space(), RunDir(tmp_path)
    for resuming in (False, True):
        log = RunLog(run, resuming)
        log.start(command=["recipesearch", "search"], space=space, storage="postgresql://u:secret@h/db",
                  ray_address=None, n_trials=8, run_dir=tmp_path, executor="inprocess")
        log.finish("finished")
    meta = run.read_meta()
    assert len(meta["sessions"]) == 2 and meta["status"] == "finished" and "secret" not in meta["storage"]
    assert meta["space_hash"] == space.hash and meta["metric_split"] == space.metric_split


def test_concurrent_reader_never_sees_half_a_file(tmp_path):
    path = tmp_path / "index.html"
    versions = [(f"<html>{i}" + "x" * 2_000_000 + "</html>\n") for i in range(2)]
    write_atomic(path, versions[0])
    stop, seen = threading.Event(), []

    def read():
        while not stop.is_set():
            text = path.read_text()
            seen.append(text.startswith("<html>") and text.endswith("</html>\n") and len(text) == len(versions[0]))

    reader = threading.Thread(target=read)
    reader.start()
    for i in range(20):
        write_atomic(path, versions[i % 2])
    stop.set()
    reader.join()
    assert seen and all(seen)
    assert [p.name for p in tmp_path.iterdir()] == ["index.html"]  # no temporary files left behind


def test_passwords_are_redacted_from_urls_and_command_lines():
    from recipesearch.rundir import redact_command, redact_url

    assert redact_url("postgresql://u:secret@127.0.0.1:5432/db") == "postgresql://u:***@127.0.0.1:5432/db"
    assert redact_url("postgresql://u:se@cr/et@host/db") == "postgresql://u:***@host/db"  # unparsable: still hidden
    assert redact_url("sqlite:////tmp/a@b/study.db") == "sqlite:////tmp/a@b/study.db"  # no password to hide
    assert redact_command(["search", "--storage", "mysql://a:pw@h/d", "--storage=postgresql://a:pw@h/d"]) == \
        ["search", "--storage", "mysql://a:***@h/d", "--storage=postgresql://a:***@h/d"]


def test_run_json_keeps_no_password(tmp_path, make_space):
    run = RunDir(tmp_path)
    space = make_space()
    run.prepare(space, resume=False, force=False)
    log = RunLog(run, resuming=False)
    log.start(command=["recipesearch", "search", "s.yaml", "--storage", "postgresql://u:secret@h/db"], space=space,
              storage="postgresql://u:secret@h/db", ray_address=None, n_trials=6, run_dir=tmp_path, executor="ray")
    assert "secret" not in (tmp_path / "run.json").read_text()
