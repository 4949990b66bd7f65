"""Two crash cycles (bench/crash_cycles.py's short version): SIGKILL the driver at random moments, resume each
time; nothing completed is lost, nothing runs twice, the study and trials.csv agree.

Two kills are what the property needs: the first hits a fresh search, the second a resumed one (its requeued
trials in flight), and the last resume finishes both. A third cycle would repeat the second at the cost of another
search start, Ray start and the bench's fixed 9 s of orphan check and clean-up."""
from __future__ import annotations

import pytest

from bench.crash_cycles import cycle_search

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_two_kill_9_cycles_lose_nothing_and_repeat_nothing(tmp_path, write_space, ray_env):
    space = write_space(trials=14, metric_split="val", baseline={"seeds": 2},
                        confirm={"top_k": 1, "seeds": 2, "max_share": 0.9})
    r = cycle_search(space, tmp_path / "run", cycles=2, seed=1, max_extra=1.5)
    assert r["final_returncode"] == 0, r["final_error"]
    assert r["lost"] == 0 and r["run_twice"] == 0 and r["study_and_csv_agree"]
    assert r["left_running_or_waiting"] == 0 and r["cycles"] == 2  # both kills landed before the search ended
    assert all(k["completed"] > 0 for k in r["kills"][1:])  # every cycle made progress before its kill
    assert r["orphans"] == 0, r["kills"]
