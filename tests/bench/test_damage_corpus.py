"""bench/damage_corpus.py: the corpus counts come from the test tables themselves."""
from __future__ import annotations

from bench.damage_corpus import outcome_counts, render_corpus


def test_every_case_is_counted_once_per_command():
    counts = outcome_counts()
    assert counts["checks"] == 3 * counts["cases"] and counts["cases"] >= 60
    for command, kinds in counts["by_command"].items():
        assert sum(kinds.values()) == counts["cases"], command
    assert counts["by_command"]["report"].get("rebuilt from study.db", 0) >= 30  # trials.csv damage, mended
    assert sum(counts["targets"].values()) == counts["cases"]


def test_the_table_has_a_row_per_command_and_says_whether_all_hold():
    counts = outcome_counts()
    tests = {"files": ["a.py", "b.py"], "passed": 10, "failed": 1, "errors": 0, "returncode": 1,
             "summary": "1 failed, 10 passed", "seconds": 3.0}
    text = render_corpus({**counts, "tests": tests})
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and not ln.startswith("| command")]
    assert [r.split(" | ")[0].strip("| ") for r in rows] == list(counts["by_command"])
    assert "Not all hold" in text
    assert "All hold." in render_corpus({**counts, "tests": {**tests, "failed": 0, "returncode": 0}})
