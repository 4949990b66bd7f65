"""A crash cycle (bench/crash_cycles.py's short version): SIGKILL the driver at a random moment, resume; nothing
completed is lost, nothing runs twice, the study and trials.csv agree, no Ray trial worker of the killed driver
keeps training.

This checks the bench's own bookkeeping on a real kill. One kill is enough for that: what a kill of a resumed
search must keep (its requeued trials, the completed ones of both sessions) is asserted deterministically by
tests/engine/test_resume.py::test_kill_9_mid_search_and_in_confirmation_then_resume (kill -9, resume, kill -9
again, resume). A second random cycle would cost another search and local Ray start for no distinct check.
After the kill the test stops waiting as soon as no trial worker is left (``until_none``; the bench counts them
at 5 s), instead of a fixed 5 s. The search has no confirmation stage (8 runs, not 18): a kill in it is that
test's too."""
from __future__ import annotations

import pytest

from bench.crash_cycles import cycle_search

pytestmark = [pytest.mark.ray, pytest.mark.system]


def test_a_kill_9_cycle_loses_nothing_and_repeats_nothing(tmp_path, write_space, ray_env):
    # the tiny space: 2 baseline runs, 6 proposals, no confirmation stage; one at a time (one trial worker a session)
    space = write_space(trials=8, concurrency=1)
    # orphans: none left once Ray has ended the dead driver's workers (30 s at most: no race with a busy machine)
    r = cycle_search(space, tmp_path / "run", cycles=1, seed=1, max_extra=1.5, until_none=True, orphan_wait=30)
    assert r["final_returncode"] == 0, r["final_error"]
    assert r["lost"] == 0 and r["run_twice"] == 0 and r["study_and_csv_agree"]
    assert r["left_running_or_waiting"] == 0 and r["cycles"] == 1  # the kill landed before the search ended
    assert all(k["completed"] > 0 for k in r["kills"])  # the cycle made progress before its kill
    assert r["orphans"] == 0, r["kills"]
