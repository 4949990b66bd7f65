"""The rung decision and the promotion rule of MO-ASHA on hand-made tables (recipesearch.analysis.rungs)."""
from __future__ import annotations

import math

import pytest

from recipesearch.analysis.rungs import (
    RungRecord,
    decide,
    keep_count,
    population,
    promotions,
    rank_order,
    rung_fractions,
    rung_step,
)


def rec(trial: int, acc: float, secs: float, budget: float = 1.0, fraction: float = 1 / 3) -> RungRecord:
    return RungRecord(trial, budget, fraction, acc, secs)


def test_rung_fractions_are_powers_of_the_reduction_factor():
    assert rung_fractions(3, 1 / 9) == pytest.approx((1 / 9, 1 / 3))
    assert rung_fractions(3, 0.2) == pytest.approx((1 / 3,))  # 1/9 is below 0.2: not a rung
    assert rung_fractions(2, 0.25) == pytest.approx((0.25, 0.5))
    assert rung_fractions(4, 0.5) == ()  # 1/4 is below 0.5: no rung before the end
    with pytest.raises(ValueError, match="reduction_factor"):
        rung_fractions(1, 0.1)
    with pytest.raises(ValueError, match="min_fraction"):
        rung_fractions(3, 1.0)


def test_rung_step_stays_inside_the_run():
    assert rung_step(1 / 3, 90) == 30
    assert rung_step(1 / 9, 5) == 1  # at least one step
    assert rung_step(0.99, 10) == 9  # never the last step: that is the trial's end
    assert rung_step(0.5, 1) is None  # a one-step run has no rung


def test_rank_order_fronts_first_then_hypervolume_contribution():
    # (accuracy, seconds): 0 and 1 and 2 are the front; 3 is dominated by 1; 4 by everything
    points = [(0.90, 10.0), (0.80, 5.0), (0.70, 1.0), (0.75, 6.0), (0.50, 20.0)]
    order = rank_order(points)
    assert set(order[:3]) == {0, 1, 2}
    assert order[3:] == [3, 4]


def test_rank_order_prefers_the_point_that_adds_most_to_the_front():
    # four non-dominated points; 2 and 3 nearly coincide, so each adds little beside the other
    points = [(0.90, 10.0), (0.50, 1.0), (0.70, 5.0), (0.699, 4.99)]
    order = rank_order(points)
    assert set(order[:2]) == {0, 1}


def test_rank_order_ties_go_to_the_earlier_row():
    assert rank_order([(0.8, 5.0), (0.8, 5.0), (0.8, 5.0)]) == [0, 1, 2]
    with pytest.raises(ValueError, match="finite"):
        rank_order([(math.nan, 1.0)])


def test_a_dominated_trial_stops_and_a_non_dominated_one_goes_on():
    others = [rec(1, 0.90, 5.0), rec(2, 0.85, 4.0), rec(3, 0.80, 3.0), rec(4, 0.88, 4.5), rec(5, 0.70, 2.0)]
    bad = decide(rec(9, 0.60, 6.0), others, reduction_factor=3)  # dominated by every other
    assert not bad.go_on and bad.n == 6 and bad.keep == 2 and bad.position == 5
    assert "stopped" in bad.describe()
    best = decide(rec(9, 0.95, 1.0), others, reduction_factor=3)  # dominates every other
    assert best.go_on and best.position == 0


def test_a_rung_with_fewer_than_eta_trials_lets_everyone_go_on():
    assert keep_count(1, 3) == 1 and keep_count(2, 3) == 2 and keep_count(3, 3) == 1 and keep_count(9, 3) == 3
    d = decide(rec(2, 0.10, 100.0), [rec(1, 0.99, 1.0)], reduction_factor=3)
    assert d.go_on and d.n == 2  # dominated, but only two trials at the rung so far


def test_budgets_and_rungs_are_never_mixed():
    # other budgets and other rungs would all dominate the candidate: they must not count
    strong = [rec(i, 0.99, 0.5, budget=2.0) for i in range(1, 7)] + \
             [rec(i, 0.99, 0.5, fraction=1 / 9) for i in range(7, 13)]
    alone = decide(rec(20, 0.50, 9.0), strong, reduction_factor=3)
    assert alone.go_on and alone.n == 1
    same = [rec(1, 0.99, 0.5), rec(2, 0.98, 0.6), rec(3, 0.97, 0.7)]
    assert not decide(rec(20, 0.50, 9.0), strong + same, reduction_factor=3).go_on
    assert [r.trial for r in population(strong + same, 1.0, 1 / 3)] == [1, 2, 3]


def test_a_trial_is_counted_once_per_rung():
    # the candidate's own earlier record (e.g. read back from the study) is not a second trial
    d = decide(rec(1, 0.5, 9.0), [rec(1, 0.5, 9.0), rec(2, 0.9, 1.0)], reduction_factor=3)
    assert d.n == 2


def test_promotions_take_the_best_third_once():
    finished = [(10, 0.80, 5.0), (11, 0.70, 4.0), (12, 0.60, 8.0), (13, 0.90, 9.0), (14, 0.50, 10.0),
                (15, 0.65, 9.5)]
    first = promotions(finished, [], reduction_factor=3)
    assert len(first) == 2 and set(first) <= {10, 11, 13}  # two of the front, never a dominated one
    assert promotions(finished, first, reduction_factor=3) == []  # nothing twice
    assert promotions(finished[:2], [], reduction_factor=3) == []  # fewer than eta finished: wait
