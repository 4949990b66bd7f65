from __future__ import annotations

import math

import numpy as np
import pytest

from recipesearch.analysis.curve_speedup import curve_speedup, speedup_profile

BASE_T, BASE_A = [10.0, 20.0, 40.0], [0.80, 0.90, 0.95]
RECIPE_T, RECIPE_A = [5.0, 10.0], [0.80, 0.90]


def test_default_target_is_highest_accuracy_both_reach():
    r = curve_speedup(RECIPE_T, RECIPE_A, BASE_T, BASE_A)
    assert r.target_accuracy == pytest.approx(0.90)  # min(0.90, 0.95)
    assert (r.baseline_time, r.recipe_time) == (pytest.approx(20.0), pytest.approx(10.0))
    assert r.speedup == pytest.approx(2.0) and r.status == "interpolated"


def test_interpolation_is_linear_in_log_time():
    # 0.85 is halfway between 0.80 and 0.90: the log-midpoints sqrt(10*20) and sqrt(5*10).
    r = curve_speedup(RECIPE_T, RECIPE_A, BASE_T, BASE_A, target=0.85)
    assert r.baseline_time == pytest.approx(math.sqrt(200.0))
    assert r.recipe_time == pytest.approx(math.sqrt(50.0))
    assert r.speedup == pytest.approx(2.0)


def test_curves_of_different_shapes_by_hand():
    recipe_t, recipe_a = [5.0, 10.0, 40.0], [0.80, 0.90, 0.96]
    # Target 0.93: baseline 3/5 of the way from 20 s to 40 s in log time -> 20 * 2**0.6;
    # recipe halfway from 10 s to 40 s -> 20 s.
    r = curve_speedup(recipe_t, recipe_a, BASE_T, BASE_A, target=0.93)
    assert r.speedup == pytest.approx(20 * 2**0.6 / 20.0)
    # Default target min(0.96, 0.95) = 0.95: baseline 40 s, recipe 10 * 4**(5/6) s.
    d = curve_speedup(recipe_t, recipe_a, BASE_T, BASE_A)
    assert d.target_accuracy == pytest.approx(0.95)
    assert d.speedup == pytest.approx(40.0 / (10 * 4 ** (5 / 6)))


def test_envelope_drops_a_longer_but_worse_budget():
    # The 30 s recipe run is worse than its 10 s run; the recipe can stop at 10 s.
    r = curve_speedup([5.0, 10.0, 30.0], [0.80, 0.90, 0.85], BASE_T, BASE_A, target=0.88)
    plain = curve_speedup([5.0, 10.0], [0.80, 0.90], BASE_T, BASE_A, target=0.88)
    assert r.speedup == pytest.approx(plain.speedup)


def test_single_point_curve_at_its_own_accuracy_is_exact():
    r = curve_speedup([10.0], [0.90], BASE_T, BASE_A)
    assert r.status == "interpolated" and r.speedup == pytest.approx(2.0)


def test_a_target_that_is_the_baselines_last_mean_but_for_float_rounding_is_reached_there():
    # the target "the baseline at budget 1" is its seeds' mean; the envelope's mean of the same three, summed in
    # another order, can differ in the last bit: still the baseline's own accuracy, reached at its last point
    accs = [0.9010, 0.8990, 0.9002]
    last = sum(accs) / 3
    target = float(np.mean(np.array(accs)[::-1]))
    r = curve_speedup([2.0, 4.0], [0.88, target + 0.01], [10.0, 20.0, 40.0], [0.80, 0.90, last],
                      target=np.nextafter(last, 1.0))
    assert r.status == "interpolated" and r.baseline_time == pytest.approx(40.0)
    assert curve_speedup([5.0, 10.0], [0.80, 0.96], BASE_T, BASE_A, target=0.9501).status == "beyond_baseline"


def test_recipe_ahead_gives_a_lower_bound():
    # Target 0.82 is below the recipe's shortest run (0.85 in 5 s): it needs at most 5 s.
    r = curve_speedup([5.0, 10.0], [0.85, 0.90], BASE_T, BASE_A, target=0.82)
    assert r.status == "recipe_ahead"
    assert r.speedup == pytest.approx(10 * 2**0.2 / 5.0)


@pytest.mark.parametrize(
    ("recipe_a", "target", "status"),
    [
        ([0.80, 0.90], 0.92, "recipe_short"),
        ([0.80, 0.99], 0.97, "beyond_baseline"),
        ([0.70, 0.90], 0.75, "below_baseline"),
        ([0.80, 0.90], 0.99, "recipe_short"),  # neither reaches it: the recipe's failure is named
        ([0.80, 0.90], float("nan"), "invalid"),
    ],
)
def test_unreachable_targets_are_nan_with_a_status(recipe_a, target, status):
    r = curve_speedup(RECIPE_T, recipe_a, BASE_T, BASE_A, target=target)
    assert r.status == status and math.isnan(r.speedup)


def test_empty_curves():
    assert curve_speedup(RECIPE_T, RECIPE_A, [np.nan], [0.9]).status == "no_baseline"
    assert curve_speedup([0.0], [0.9], BASE_T, BASE_A).status == "no_recipe"


def test_speedup_profile_covers_the_overlap_and_matches_curve_speedup():
    recipe_t, recipe_a = [5.0, 10.0, 40.0], [0.82, 0.90, 0.96]
    p = speedup_profile(recipe_t, recipe_a, BASE_T, BASE_A, n_points=7)
    assert p.accuracies[0] == pytest.approx(0.82) and p.accuracies[-1] == pytest.approx(0.95)
    assert len(p.speedups) == 7 and np.all(np.isfinite(p.speedups))
    for acc, speedup in zip(p.accuracies, p.speedups):
        assert speedup == pytest.approx(curve_speedup(recipe_t, recipe_a, BASE_T, BASE_A, target=acc).speedup)


def test_speedup_profile_empty_without_overlap():
    p = speedup_profile([5.0, 10.0], [0.96, 0.97], BASE_T, BASE_A)
    assert len(p.accuracies) == 0 and len(p.speedups) == 0
