"""bench/trainer_instructions.py: how the instruction counts decide the goal (no valgrind, no timing)."""
from __future__ import annotations

from bench.trainer_instructions import insn_goal, instructions_met


def _counts(*ratios: float) -> dict:
    return {"commit": "abc1234", "configs": {f"c{i}": {"bare_over_trainer": r} for i, r in enumerate(ratios)}}


def test_the_instruction_goal_needs_every_config_at_or_above_the_ratio():
    assert instructions_met(_counts(1.0001, 0.98))
    assert not instructions_met(_counts(1.0, 0.97))
    assert not instructions_met(_counts())  # nothing counted meets nothing


def test_no_counts_say_nothing():
    assert insn_goal(None) == ""
