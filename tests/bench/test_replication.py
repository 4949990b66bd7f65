"""bench/replication.py: a thin caller of ``recipesearch replicate``; its table and goal from the scored claims."""
from __future__ import annotations

import math

from bench.replication import claim_rows, render, replicate, summarise
from tests.engine.test_replicate import finished_search
from tests.report import fake_run


def test_the_benchmark_replicates_through_the_command_and_keeps_its_shape(tmp_path):
    run = finished_search(tmp_path / "run")
    result = replicate(run, seeds=1, executor="inprocess")
    assert result["replication_dir"] == str(run / "replication") and (run / "replication" / "replication.csv").is_file()
    kinds = sorted(c["kind"] for c in result["claims"])
    assert "curve" in kinds and all(len(c["ci"]) == 2 for c in result["claims"])
    curve = next(c for c in result["claims"] if c["kind"] == "curve")
    assert curve["number"] == fake_run.CONFIRMED_NUMBER and curve["budgets"] == [0.5, 1.0, 2.0]
    assert result["headline"]["number"] == fake_run.CONFIRMED_NUMBER
    assert result["confirm_share"] > 0 and math.isfinite(curve["fresh_speedup_test"])


def claim(inside: bool, fresh: float) -> dict:
    return {"kind": "curve", "number": 4, "algorithms": "label_smoothing", "budgets": [0.5, 1.0], "speedup": 2.0,
            "ci": [1.5, 2.5], "fresh_speedup_test": fresh, "fresh_speedup_val": fresh, "inside": inside}


def test_rows_and_goal_come_from_the_scored_claims():
    search = {"space": "s", "run_dir": "r", "verdict": "v", "confirm_share": 0.3, "headline": {},
              "claims": [claim(False, 1.05), claim(True, 2.1)]}
    rows = claim_rows(search)
    assert [r[5] for r in rows] == ["1.05x", "2.10x"] and [r[-1] for r in rows] == ["no", "yes"]
    summary = summarise({"searches": [search]})
    assert summary["inside_share"] == 0.5 and not summary["goal_met"]
    assert summarise({"searches": [{**search, "claims": [claim(True, 2.0)] * 4 + [claim(False, 1.0)]}]})["goal_met"]
    assert "| claim | trial |" in render(summary)  # one smoke check of the renderer
