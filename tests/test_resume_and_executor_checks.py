"""Issue 32 item 7, the two cases checked by the driver and the run directory (engine/driver.py, rundir.py):
``--resume`` on a folder that does not exist or is empty is one line (it used to start a new search), and
``--executor inprocess`` with more than one GPU a trial is refused as ``workers: 2`` there is (it used to
train on one device, or the CPU). """
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from recipesearch.cli import main
from recipesearch.errors import UserError
from recipesearch.rundir import RunDir
from recipesearch.space import loads_space


def space_data(**overrides) -> dict:
    data = {"name": "tiny", "budgets": [1], "trials": 3, "confirm": False, "metric_split": "test",
            "base": {"model": {"name": "cnn", "width": 8}, "data": {"name": "digits"}, "max_duration": 1,
                     "device": "cpu"}}
    return {**data, **overrides}


@pytest.fixture
def space_file(tmp_path):
    def write(**overrides) -> Path:
        path = tmp_path / "space.yaml"
        path.write_text(yaml.safe_dump(space_data(**overrides), sort_keys=False))
        return path

    return write


@pytest.fixture
def never_searches(monkeypatch):
    """A search that gets past every check fails the test instead of training."""
    from recipesearch.engine.driver import SearchDriver

    def started(self):
        raise AssertionError("the search started")

    monkeypatch.setattr(SearchDriver, "run", started)


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


# -- --resume where there is nothing to resume ----------------------------------------------------------
@pytest.mark.parametrize("state", ["does not exist", "is empty"])
def test_resume_of_nothing_is_refused_by_the_run_directory(tmp_path, state):
    root = tmp_path / "run"
    if state == "is empty":
        root.mkdir()
    with pytest.raises(UserError) as info:
        RunDir(root).check(loads_space(yaml.safe_dump(space_data())), resume=True, force=False)
    assert str(info.value) == f"--resume: {root} {state}: there is no search to continue; start it without --resume"


@pytest.mark.parametrize("state", ["does not exist", "is empty"])
def test_resume_of_nothing_is_one_line_and_leaves_nothing(tmp_path, space_file, capsys, never_searches, state):
    out = tmp_path / "run"
    if state == "is empty":
        out.mkdir()
    code = main(["search", str(space_file()), "--out", str(out), "--resume", "--executor", "inprocess", "--quiet"])
    assert code == 2
    assert one_error_line(capsys) == (f"error: --resume: {out} {state}: there is no search to continue; start it "
                                      "without --resume")
    assert out.exists() == (state == "is empty") and not (out.exists() and any(out.iterdir()))


def test_resume_of_a_search_directory_is_still_a_resume(tmp_path):
    space = loads_space(yaml.safe_dump(space_data()))
    run = RunDir(tmp_path / "run")
    assert not run.prepare(space, resume=False, force=False)
    assert run.check(space, resume=True, force=False)


# -- --executor inprocess with more than one GPU a trial -------------------------------------------------
def driver(space, tmp_path, **options):
    from recipesearch.engine.driver import SearchDriver
    from recipesearch.engine.search_options import SearchOptions

    return SearchDriver(space, SearchOptions(out=tmp_path / "run", executor="inprocess", quiet=True, **options))


def test_inprocess_refuses_two_gpus_from_the_space(tmp_path):
    space = loads_space(yaml.safe_dump(space_data(resources={"gpus": 2})))
    with pytest.raises(UserError) as info:
        driver(space, tmp_path)
    assert str(info.value) == ("--executor inprocess trains one trial at a time on one device; resources.gpus 2 "
                               "needs the Ray executor (or ask for 1 GPU)")


def test_inprocess_refuses_two_gpus_from_the_command_line(tmp_path, space_file, capsys, never_searches):
    out = tmp_path / "run"
    code = main(["search", str(space_file()), "--out", str(out), "--executor", "inprocess", "--gpus-per-trial", "2",
                 "--quiet"])
    assert code == 2
    assert one_error_line(capsys) == ("error: --executor inprocess trains one trial at a time on one device; "
                                      "--gpus-per-trial 2 needs the Ray executor (or ask for 1 GPU)")
    assert not out.exists()


@pytest.mark.parametrize("gpus", ["auto", 0, 0.5, 1])
def test_inprocess_takes_at_most_one_gpu(tmp_path, gpus):
    space = loads_space(yaml.safe_dump(space_data(resources={"gpus": gpus})))
    assert driver(space, tmp_path).resources.gpus == (gpus if gpus == "auto" else float(gpus))


def test_inprocess_still_refuses_workers(tmp_path):
    space = loads_space(yaml.safe_dump(space_data(resources={"workers": 2}, base={
        **space_data()["base"], "batch_size": 64})))
    with pytest.raises(UserError, match="resources.workers 2 needs the Ray executor"):
        driver(space, tmp_path)
