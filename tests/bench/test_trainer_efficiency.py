"""bench/trainer_efficiency.py and its render: the section renders from a saved result (a smoke check; the
loop-overhead and instruction parts are tested in test_trainer_loop_overhead.py and test_trainer_instructions.py)."""
from __future__ import annotations

from bench import trainer_efficiency as te
from bench import trainer_efficiency_render


def test_a_result_renders_its_tables(monkeypatch):
    monkeypatch.setattr(trainer_efficiency_render, "plot", lambda result: None)  # no figure into reports/
    result = {"configs": [], "repeats": 3, "quick": True, "peak_matmul": {"best_flops_per_s": 1e11, "before": {"n": 8}},
              "goal": {"ratio_min": te.GOAL_RATIO, "met": True, "met_cpu_time": True}, "load_during_runs": {},
              "loop_overhead": None}
    assert "| config | steps/run | repeats | bare img/s |" in te.render(result)
