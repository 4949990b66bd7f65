"""bench/trainer_efficiency.py: how the instruction counts decide the goal (no valgrind, no timing), and the
event-loop overhead section: its arms do the same work, and its table shows the measured data."""
from __future__ import annotations

import pytest

from bench import trainer_efficiency as te
from bench.trainer_efficiency import _insn_goal


def _counts(*ratios: float) -> dict:
    return {"commit": "abc1234", "configs": {f"c{i}": {"bare_over_trainer": r} for i, r in enumerate(ratios)}}


def test_the_instruction_goal_needs_every_config_at_or_above_the_ratio():
    assert "**met** (1.0001, 0.9800)" in _insn_goal(_counts(1.0001, 0.98))
    assert "**not met**" in _insn_goal(_counts(1.0, 0.97))


def test_no_counts_say_nothing():
    assert _insn_goal(None) == ""


def test_no_op_hooks_sit_one_per_per_step_event():
    assert [h.events for h in te.noop_hooks(10)] == [frozenset({e}) for e in te.PER_STEP_EVENTS]
    assert [next(iter(h.events)) for h in te.noop_hooks(5)] == list(te.PER_STEP_EVENTS[::2])
    assert [h.declines for h in te.noop_hooks(4)] == [True, False, True, False]  # both ways of doing nothing
    assert te.noop_hooks(0) == []


@pytest.mark.parametrize("arm", ["trainer", "trainer+10 no-op hooks"])
def test_trainer_arms_train_the_bare_loops_weights_bit_for_bit(arm):
    bundle = te._tiny_bundle(20)
    _, _, bare = te.loop_run("bare", bundle)
    _, _, trained = te.loop_run(arm, bundle)
    assert trained.equal(bare)


def _table(markdown: str, first_header: str) -> list[list[str]]:
    """The cells of the markdown table whose header starts with ``first_header`` (header row first)."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_header} |"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        if not line.startswith("|---"):
            rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def _summary(median: float, q1: float, q3: float, lo: float, hi: float, n: int = 3) -> dict:
    return {"median": median, "q1": q1, "q3": q3, "min": lo, "max": hi, "n": n}


def _loop(wall_10: float, cpu_10: float) -> dict:
    arms = list(te.LOOP_ARMS)
    overhead = {"trainer": _summary(12.0, 11.0, 13.0, 10.0, 14.0),
                "trainer+5 no-op hooks": _summary(15, 14, 16, 13, 17),
                "trainer+10 no-op hooks": _summary(wall_10, wall_10 - 1, wall_10 + 1, wall_10 - 2, wall_10 + 2),
                "trainer+registered no-op": _summary(16, 15, 17, 14, 18)}
    cpu = {**overhead, "trainer+10 no-op hooks": _summary(cpu_10, cpu_10 - 1, cpu_10 + 1, cpu_10 - 2, cpu_10 + 2)}
    return {
        "steps": 2000, "repeats": 3, "batch_size": 8, "image": [1, 4, 4], "threads": 1, "arms": arms,
        "hooks": {a: h for a, h in zip(arms, [0, 0, 5, 10, 4])}, "registered": te.LOOP_REGISTERED,
        "us_per_step": {a: _summary(200.0 + i, 199.0 + i, 201.0 + i, 198.0, 210.0) for i, a in enumerate(arms)},
        "overhead_us_per_step": overhead, "cpu_overhead_us_per_step": cpu,
        "same_weights_as_bare": {"bare": True, "trainer": True, "trainer+5 no-op hooks": True,
                                 "trainer+10 no-op hooks": False, "trainer+registered no-op": None},
        "load_during_runs": _summary(1.0, 1.0, 1.0, 0.5, 1.5),
        "goal": {"us_max": 30.0, "hooks": 10, "arm": "trainer+10 no-op hooks", "met": wall_10 <= 30,
                 "cpu_met": cpu_10 <= 30},
    }


def _rendered(loop: dict, monkeypatch) -> str:
    monkeypatch.setattr(te, "plot", lambda result: None)  # no figure written into reports/
    result = {"configs": [], "repeats": 3, "quick": True, "peak_matmul": {"best_flops_per_s": 1e11, "before": {"n": 8}},
              "goal": {"ratio_min": 0.98, "met": True, "met_cpu_time": True}, "load_during_runs": {},
              "loop_overhead": loop}
    return te.render(result)


def test_render_shows_the_loop_overhead_per_arm_and_judges_the_goal_on_ten_hooks(monkeypatch):
    rows = _table(_rendered(_loop(wall_10=25.0, cpu_10=31.0), monkeypatch), "arm")
    header, body = rows[0], {r[0]: dict(zip(rows[0], r)) for r in rows[1:]}
    assert header[:2] == ["arm", "per-step hooks"] and len(body) == len(te.LOOP_ARMS)
    assert [body[a]["per-step hooks"] for a in te.LOOP_ARMS] == ["0", "0", "5", "10", "4"]
    ten = body["trainer+10 no-op hooks"]
    assert ten["µs/step (median [IQR])"] == "203.0 [202.0–204.0]"
    assert ten["overhead µs/step (median [IQR])"] == "25.0 [24.0–26.0]"
    assert ten["overhead min–max"] == "23.0–27.0"
    assert ten["CPU-time overhead µs/step"] == "31.0 [30.0–32.0]"
    assert ten["≤ 30 µs (wall/CPU)"] == "yes/no"  # wall-clock median 25 meets it, CPU time 31 does not
    assert ten["same weights as bare"] == "no"
    assert body["trainer"]["≤ 30 µs (wall/CPU)"] == ""  # only the 10-hook arm is judged
    assert body["trainer"]["overhead µs/step (median [IQR])"] == "12.0 [11.0–13.0]"
    assert body["bare"]["overhead µs/step (median [IQR])"] == "–"
    assert body["bare"]["same weights as bare"] == "reference"
    assert body["trainer+registered no-op"]["same weights as bare"] == "n/a"


def test_a_result_without_the_loop_measurement_still_renders(monkeypatch):
    assert "not measured yet" in _rendered(None, monkeypatch)


def test_a_measured_loop_overhead_renders_every_arm(monkeypatch):
    monkeypatch.setattr(te, "LOOP_STEPS", (30, 30))
    loop = te.loop_overhead(quick=True, repeats=1)
    rows = _table(_rendered(loop, monkeypatch), "arm")[1:]
    assert [r[0] for r in rows] == list(te.LOOP_ARMS)
    assert [r[1] for r in rows] == ["0", "0", "5", "10", "4"]  # 4: EMA, Lookahead, layer freezing, selective bp
    assert [r[-1] for r in rows] == ["reference", "yes", "yes", "yes", "n/a"]
    assert loop["runs"] and {m["arm"] for m in loop["runs"]} == set(te.LOOP_ARMS)
