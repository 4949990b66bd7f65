"""§4's real-search arms (bench/search_efficiency/real.py): each swaps the sampler and the scheduler only."""
from __future__ import annotations

import pytest

from bench.search_efficiency.config import REAL_ARMS
from bench.search_efficiency.real import real_space


def test_issue_14s_seven_arms_and_promotion_with_the_model_based_samplers():
    assert set(REAL_ARMS) == {"random", "tpe", "gp", "nsga2", "tpe+moasha", "random+moasha", "promote",
                              "tpe+promote", "gp+promote"}


@pytest.mark.parametrize("arm", ["tpe+moasha", "promote", "gp", "gp+promote"])
def test_a_real_arm_swaps_only_the_sampler_and_the_scheduler(arm):
    space = real_space(arm, 1, quick=True)
    sampler, scheduler = REAL_ARMS[arm]
    assert space.sampler.name == sampler and space.sampler.seed == 1 and space.scheduler.name == scheduler
    assert space.budgets == [0.25, 0.5] and space.trials == 10 and not space.confirm.enabled
    fifo = real_space("random", 1, quick=True)
    assert space.base.to_dict() == fifo.base.to_dict() and space.budgets == fifo.budgets
