"""One driver per run directory (runlock): while a search runs, a second `search --resume`, `--force` or plain
`search` on its run directory is one line and exit 2, and the running search ends as if alone."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pandas as pd
import pytest

from tests.conftest import call_cli
from tests.engine.conftest import REPO

pytestmark = [pytest.mark.ray, pytest.mark.system]


def _snapshot(out):
    return {p.relative_to(out).as_posix(): p.stat().st_size for p in out.rglob("*")
            if p.is_file() and "ray" not in p.relative_to(out).parts and p.suffix in (".yaml", ".json")}


def test_a_second_driver_on_a_running_run_directory_changes_nothing(tmp_path, write_space, shared_ray, capsys,
                                                                     wait_for_trials):
    space = write_space(trials=8, concurrency=1, base={"model": {"name": "cnn", "width": 8},
                                                        "data": {"name": "digits"}, "max_duration": 4,
                                                        "batch_size": 64, "device": "cpu"})
    out, log = tmp_path / "run", tmp_path / "first.log"
    cmd = ["search", str(space), "--out", str(out), "--quiet", "--no-report", *shared_ray.args]
    first = subprocess.Popen([sys.executable, "-m", "recipesearch", *cmd], cwd=REPO, env=shared_ray.env,
                             stdout=log.open("w"), stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not (out / "run.json").exists():  # polling the study sooner would create study.db under the driver
            assert first.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        wait_for_trials(first, out, log, "a running trial", lambda ts: any(t.state.name == "RUNNING" for t in ts))
        before = _snapshot(out)
        for extra in (["--resume"], ["--force"], []):  # the second driver: in this process (refused at once)
            code, stdout, stderr = call_cli(capsys, *cmd, *extra)
            lines = [ln for ln in stderr.splitlines() if ln.strip()]
            assert code == 2 and len(lines) == 1, (extra, stdout, stderr)
            if extra:
                assert "another recipesearch is driving the run directory" in lines[0]
                assert f"pid {first.pid}" in lines[0]
            else:
                assert "is not empty" in lines[0]
        assert first.poll() is None, log.read_text()
        assert before.keys() <= _snapshot(out).keys()  # nothing deleted (the running search still writes)
        assert (out / "space.yaml").read_bytes() and (out / "study.db").exists()
        assert first.wait(timeout=300) == 0, log.read_text()
    finally:
        if first.poll() is None:
            first.kill()
    trials = pd.read_csv(out / "trials.csv")
    assert len(trials) == 8 and "FAIL" not in set(trials["state"])  # not 10, none requeued as interrupted
    sessions = json.loads((out / "run.json").read_text())["sessions"]
    assert len(sessions) == 1 and sessions[0]["end_time"] and sessions[0]["status"] == "finished"
    assert "Traceback" not in log.read_text()
