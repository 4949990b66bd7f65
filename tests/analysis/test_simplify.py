"""analysis/simplify.py: which removals the simplify stage keeps, on plain arrays."""
from __future__ import annotations

import math

import pytest

from recipesearch.analysis.simplify import removals

WHOLE = ([0.90, 0.91, 0.92], [10.0, 10.0, 10.0])  # mean 0.91; standard error of the mean 0.00577


def _one(without, whole=WHOLE):
    (r,) = removals(whole, {"m": without})
    return r


def test_a_method_that_costs_time_and_buys_nothing_is_dropped():
    r = _one(([0.91, 0.91, 0.91], [8.0, 8.0, 8.0]))
    assert r.drop and r.accuracy_change == pytest.approx(0.0) and r.seconds_ratio == pytest.approx(0.8)
    assert "dropped" in r.describe() and "x0.80 time" in r.describe()


def test_a_method_that_saves_time_is_kept_even_when_accuracy_is_equal():
    r = _one(([0.91, 0.91, 0.91], [12.0, 12.0, 12.0]))
    assert not r.drop and r.seconds_ratio == pytest.approx(1.2)


def test_a_loss_within_the_noise_drops_beyond_it_keeps():
    # noise = sqrt(var(whole)/3 + var(without)/3) = sqrt(1e-4/3 + 1e-4/3) = 0.00816
    within = _one(([0.895, 0.905, 0.915], [9.0, 9.0, 9.0]))  # -0.5 pp
    assert within.noise == pytest.approx(math.sqrt(2e-4 / 3)) and within.drop
    beyond = _one(([0.88, 0.89, 0.90], [9.0, 9.0, 9.0]))  # -2 pp
    assert not beyond.drop


def test_one_seed_has_no_noise_so_any_loss_keeps_the_method():
    whole = ([0.91], [10.0])
    assert not _one(([0.9099], [5.0]), whole).drop
    assert _one(([0.91], [5.0]), whole).drop


def test_no_finished_run_without_the_method_keeps_it():
    r = _one(([math.nan, math.nan], [math.nan, 3.0]))
    assert not r.drop and r.seeds == 0 and "no finished run" in r.describe()
    assert not _one(([0.9], [5.0]), ([], [])).drop  # nor when the whole recipe has none


def test_verdicts_come_in_the_order_given():
    out = removals(WHOLE, {"b": ([0.95], [5.0]), "a": ([0.5], [5.0])})
    assert [(r.method, r.drop) for r in out] == [("b", True), ("a", False)]
