"""bench/trainer_loop_overhead.py: the event-loop overhead arms do the same work as the bare loop, and the
section's table rows carry the measured data and judge the goal on the ten-hook arm only."""
from __future__ import annotations

import pytest

from bench import trainer_loop_overhead as lo


def test_no_op_hooks_sit_one_per_per_step_event():
    assert [h.events for h in lo.noop_hooks(10)] == [frozenset({e}) for e in lo.PER_STEP_EVENTS]
    assert [next(iter(h.events)) for h in lo.noop_hooks(5)] == list(lo.PER_STEP_EVENTS[::2])
    assert [h.declines for h in lo.noop_hooks(4)] == [True, False, True, False]  # both ways of doing nothing
    assert lo.noop_hooks(0) == []


@pytest.mark.parametrize("arm", ["trainer", "trainer+10 no-op hooks"])
def test_trainer_arms_train_the_bare_loops_weights_bit_for_bit(arm):
    bundle = lo.tiny_bundle(20)
    _, _, bare = lo.loop_run("bare", bundle)
    _, _, trained = lo.loop_run(arm, bundle)
    assert trained.equal(bare)


def _summary(median: float, q1: float, q3: float, lo_: float, hi: float, n: int = 3) -> dict:
    return {"median": median, "q1": q1, "q3": q3, "min": lo_, "max": hi, "n": n}


def _loop(wall_10: float, cpu_10: float) -> dict:
    arms = list(lo.LOOP_ARMS)
    overhead = {"trainer": _summary(12.0, 11.0, 13.0, 10.0, 14.0),
                "trainer+5 no-op hooks": _summary(15, 14, 16, 13, 17),
                "trainer+10 no-op hooks": _summary(wall_10, wall_10 - 1, wall_10 + 1, wall_10 - 2, wall_10 + 2),
                "trainer+registered no-op": _summary(16, 15, 17, 14, 18)}
    cpu = {**overhead, "trainer+10 no-op hooks": _summary(cpu_10, cpu_10 - 1, cpu_10 + 1, cpu_10 - 2, cpu_10 + 2)}
    return {
        "steps": 2000, "repeats": 3, "batch_size": 8, "image": [1, 4, 4], "threads": 1, "arms": arms,
        "hooks": {a: h for a, h in zip(arms, [0, 0, 5, 10, 4])}, "registered": lo.LOOP_REGISTERED,
        "us_per_step": {a: _summary(200.0 + i, 199.0 + i, 201.0 + i, 198.0, 210.0) for i, a in enumerate(arms)},
        "overhead_us_per_step": overhead, "cpu_overhead_us_per_step": cpu,
        "same_weights_as_bare": {"bare": True, "trainer": True, "trainer+5 no-op hooks": True,
                                 "trainer+10 no-op hooks": False, "trainer+registered no-op": None},
        "load_during_runs": _summary(1.0, 1.0, 1.0, 0.5, 1.5),
        "goal": {"us_max": 30.0, "hooks": 10, "arm": "trainer+10 no-op hooks", "met": wall_10 <= 30,
                 "cpu_met": cpu_10 <= 30},
    }


COLUMNS = ["arm", "per-step hooks", "µs/step", "overhead", "overhead min–max", "CPU-time overhead", "goal",
           "same weights as bare"]


def test_the_rows_show_the_loop_overhead_per_arm_and_judge_the_goal_on_ten_hooks():
    rows = lo.loop_rows(_loop(wall_10=25.0, cpu_10=31.0))
    body = {r[0]: dict(zip(COLUMNS, r)) for r in rows}
    assert list(body) == list(lo.LOOP_ARMS)
    assert [body[a]["per-step hooks"] for a in lo.LOOP_ARMS] == [0, 0, 5, 10, 4]
    ten = body["trainer+10 no-op hooks"]
    assert ten["µs/step"] == "203.0 [202.0–204.0]"
    assert ten["overhead"] == "25.0 [24.0–26.0]"
    assert ten["overhead min–max"] == "23.0–27.0"
    assert ten["CPU-time overhead"] == "31.0 [30.0–32.0]"
    assert ten["goal"] == "yes/no"  # wall-clock median 25 meets it, CPU time 31 does not
    assert ten["same weights as bare"] == "no"
    assert body["trainer"]["goal"] == ""  # only the 10-hook arm is judged
    assert body["trainer"]["overhead"] == "12.0 [11.0–13.0]"
    assert body["bare"]["overhead"] == "–"
    assert body["bare"]["same weights as bare"] == "reference"
    assert body["trainer+registered no-op"]["same weights as bare"] == "n/a"


def test_the_section_renders_its_table_or_says_it_was_not_measured():
    assert "| arm | per-step hooks |" in "\n".join(lo.loop_section(_loop(wall_10=25.0, cpu_10=31.0)))
    assert lo.loop_section(None)[1].startswith("_Event-loop overhead per step: not measured yet")


def test_a_measured_loop_overhead_has_every_arm(monkeypatch):
    monkeypatch.setattr(lo, "LOOP_STEPS", (30, 30))
    loop = lo.loop_overhead(quick=True, repeats=1)
    rows = lo.loop_rows(loop)
    assert [r[0] for r in rows] == list(lo.LOOP_ARMS)
    assert [r[1] for r in rows] == [0, 0, 5, 10, 4]  # 4: EMA, Lookahead, layer freezing, selective bp
    assert [r[-1] for r in rows] == ["reference", "yes", "yes", "yes", "n/a"]
    assert loop["runs"] and {m["arm"] for m in loop["runs"]} == set(lo.LOOP_ARMS)
