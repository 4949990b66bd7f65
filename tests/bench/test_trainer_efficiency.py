"""bench/trainer_efficiency.py: how the instruction counts decide the goal (no valgrind, no timing)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # bench/ is a top-level folder next to recipesearch/, not an installed package
    sys.path.insert(0, str(ROOT))

from bench.trainer_efficiency import _insn_goal  # noqa: E402


def _counts(*ratios: float) -> dict:
    return {"commit": "abc1234", "configs": {f"c{i}": {"bare_over_trainer": r} for i, r in enumerate(ratios)}}


def test_the_instruction_goal_needs_every_config_at_or_above_the_ratio():
    assert "**met** (1.0001, 0.9800)" in _insn_goal(_counts(1.0001, 0.98))
    assert "**not met**" in _insn_goal(_counts(1.0, 0.97))


def test_no_counts_say_nothing():
    assert _insn_goal(None) == ""
