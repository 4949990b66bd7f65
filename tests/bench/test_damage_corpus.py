"""bench/damage_corpus.py: the corpus counts come from the test tables themselves."""
from __future__ import annotations

from bench.damage_corpus import all_hold, command_rows, outcome_counts, render_corpus


def test_every_case_is_counted_once_per_command():
    counts = outcome_counts()
    assert counts["checks"] == 3 * counts["cases"] and counts["cases"] >= 60
    for command, kinds in counts["by_command"].items():
        assert sum(kinds.values()) == counts["cases"], command
    assert counts["by_command"]["report"].get("rebuilt from study.db", 0) >= 30  # trials.csv damage, mended
    assert sum(counts["targets"].values()) == counts["cases"]


def test_the_table_has_a_row_per_command_and_says_whether_all_hold():
    counts = outcome_counts()
    rows = command_rows(counts)
    assert [r[0] for r in rows] == list(counts["by_command"])
    assert all(sum(r[1:]) == counts["cases"] for r in rows)  # refused + done + rebuilt: every case once
    tests = {"files": ["a.py", "b.py"], "passed": 10, "failed": 1, "errors": 0, "returncode": 1,
             "summary": "1 failed, 10 passed", "seconds": 3.0}
    assert not all_hold(tests) and all_hold({**tests, "failed": 0, "returncode": 0})
    assert not all_hold({**tests, "failed": 0, "errors": 1})
    assert "| command | refused" in render_corpus({**counts, "tests": tests})
