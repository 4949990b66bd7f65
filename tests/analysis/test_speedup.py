from __future__ import annotations

import math

import numpy as np
import pytest

from recipesearch.analysis import (
    accuracy_at_matched_time,
    accuracy_gains_at_matched_time,
    baseline_envelope,
    best_speedup_at_baseline_accuracy,
    final_baseline_accuracy,
    speedup_at_matched_accuracy,
    speedups_at_matched_accuracy,
    time_to_reach,
    times_to_reach,
)

BT, BA = [10.0, 40.0], [0.80, 0.90]


def test_envelope_sorts_and_drops_non_improving_points():
    c = baseline_envelope([40, 10, 20, 80, np.nan, 0], [0.90, 0.80, 0.78, 0.89, 0.99, 0.99])
    assert c.times.tolist() == [10, 40]
    assert c.accuracies.tolist() == [0.80, 0.90]


def test_envelope_equal_times_keep_best():
    c = baseline_envelope([10, 10, 20], [0.8, 0.85, 0.85])
    assert c.times.tolist() == [10] and c.accuracies.tolist() == [0.85]


def test_time_to_reach_log_interpolation():
    # log-midpoint of 10 s and 40 s is 20 s.
    t, s = time_to_reach(0.85, (BT, BA))
    assert t == pytest.approx(20.0) and s == "interpolated"
    assert time_to_reach(0.90, (BT, BA)) == (pytest.approx(40.0), "interpolated")
    # Three points: 0.925 is halfway between 40 s and 160 s in log time -> 80 s.
    assert time_to_reach(0.925, ([10, 40, 160], [0.8, 0.9, 0.95]))[0] == pytest.approx(80.0)


def test_time_to_reach_statuses():
    t, s = time_to_reach(0.95, (BT, BA))
    assert math.isnan(t) and s == "beyond_baseline"
    assert time_to_reach(0.80, (BT, BA)) == (10.0, "below_baseline")
    assert time_to_reach(0.50, (BT, BA)) == (10.0, "below_baseline")
    t, s = time_to_reach(float("nan"), (BT, BA))
    assert math.isnan(t) and s == "invalid"
    t, s = time_to_reach(0.5, ([], []))
    assert math.isnan(t) and s == "no_baseline"
    # A one-point baseline: at or below its accuracy -> its time, above -> beyond.
    assert time_to_reach(0.8, ([10], [0.8])) == (10.0, "below_baseline")
    assert time_to_reach(0.81, ([10], [0.8]))[1] == "beyond_baseline"


def test_times_to_reach_vectorised():
    t, s = times_to_reach([0.85, 0.95, 0.7], (BT, BA))
    assert t[0] == pytest.approx(20.0) and math.isnan(t[1]) and t[2] == 10.0
    assert s.tolist() == ["interpolated", "beyond_baseline", "below_baseline"]


def test_speedup_by_hand():
    r = speedup_at_matched_accuracy(5.0, 0.85, BT, BA)
    assert r.speedup == pytest.approx(4.0) and r.baseline_time == pytest.approx(20.0)
    assert r.status == "interpolated"


def test_speedup_statuses():
    r = speedup_at_matched_accuracy(5.0, 0.95, BT, BA)
    assert math.isnan(r.speedup) and r.status == "beyond_baseline"
    r = speedup_at_matched_accuracy(2.0, 0.70, BT, BA)
    assert (r.speedup, r.baseline_time, r.status) == (5.0, 10.0, "below_baseline")
    for bad_time in (0.0, float("nan")):
        r = speedup_at_matched_accuracy(bad_time, 0.85, BT, BA)
        assert math.isnan(r.speedup) and r.status == "invalid"
    r = speedup_at_matched_accuracy(5.0, 0.85, [], [])
    assert math.isnan(r.speedup) and r.status == "no_baseline"


def test_non_monotone_baseline_uses_envelope():
    # (20 s, 0.78) is worse than the 10 s run: it is dropped, so 0.85 still maps to 20 s.
    r = speedup_at_matched_accuracy(5.0, 0.85, [10, 20, 40], [0.80, 0.78, 0.90])
    assert r.speedup == pytest.approx(4.0)


def test_vectorised_speedups_match_scalar():
    times = np.array([5.0, 5.0, 2.0, 0.0, 8.0])
    accs = np.array([0.85, 0.95, 0.70, 0.85, 0.88])
    arr = speedups_at_matched_accuracy(times, accs, BT, BA)
    for i in range(len(times)):
        one = speedup_at_matched_accuracy(times[i], accs[i], BT, BA)
        assert arr.status[i] == one.status
        np.testing.assert_allclose(arr.speedup[i], one.speedup)
        np.testing.assert_allclose(arr.baseline_time[i], one.baseline_time)


def test_accuracy_at_matched_time():
    g = accuracy_at_matched_time(20.0, 0.90, BT, BA)
    assert g.baseline_accuracy == pytest.approx(0.85) and g.gain == pytest.approx(0.05)
    assert g.status == "interpolated"
    g = accuracy_at_matched_time(5.0, 0.82, BT, BA)
    assert (g.baseline_accuracy, g.status) == (0.80, "below_baseline") and g.gain == pytest.approx(0.02)
    g = accuracy_at_matched_time(100.0, 0.92, BT, BA)
    assert (g.baseline_accuracy, g.status) == (0.90, "beyond_baseline") and g.gain == pytest.approx(0.02)
    assert accuracy_at_matched_time(40.0, 0.9, BT, BA).status == "interpolated"
    assert accuracy_at_matched_time(10.0, 0.9, [10], [0.8]).gain == pytest.approx(0.1)
    assert accuracy_at_matched_time(float("nan"), 0.9, BT, BA).status == "invalid"
    assert accuracy_at_matched_time(10.0, 0.9, [], []).status == "no_baseline"
    arr = accuracy_gains_at_matched_time([20.0, 5.0], [0.9, 0.82], BT, BA)
    assert arr.gain == pytest.approx([0.05, 0.02])


def test_headline_speedup():
    times = [20.0, 8.0, 10.0, 5.0]
    accs = [0.91, 0.90, 0.95, 0.85]
    h = best_speedup_at_baseline_accuracy(times, accs, BT, BA)
    assert h.target_accuracy == 0.90 and h.baseline_time == pytest.approx(40.0)
    assert (h.index, h.recipe_time, h.recipe_accuracy) == (1, 8.0, 0.90)
    assert h.speedup == pytest.approx(5.0)
    # Equally fast: the more accurate one wins.
    h = best_speedup_at_baseline_accuracy(times + [8.0], accs + [0.92], BT, BA)
    assert h.index == 4


def test_headline_noisy_longest_run_uses_earliest_time_reaching_it():
    # The 80 s run (0.88) is worse than the 40 s one; the envelope reaches 0.88 at 10 * 4**0.8 s.
    h = best_speedup_at_baseline_accuracy([10.0], [0.9], [10, 40, 80], [0.8, 0.9, 0.88])
    assert h.target_accuracy == 0.88
    assert h.baseline_time == pytest.approx(10 * 4**0.8)
    assert h.speedup == pytest.approx(4**0.8)


def test_headline_when_nothing_reaches_target():
    h = best_speedup_at_baseline_accuracy([5.0, np.nan], [0.85, 0.99], BT, BA)
    assert h.index is None and math.isnan(h.speedup) and h.baseline_time == pytest.approx(40.0)
    h = best_speedup_at_baseline_accuracy([5.0], [0.85], [], [])
    assert h.index is None and math.isnan(h.target_accuracy)
    h = best_speedup_at_baseline_accuracy([5.0], [0.85], BT, BA, target_accuracy=0.85)
    assert h.index == 0 and h.speedup == pytest.approx(4.0)


def test_final_baseline_accuracy_is_the_longest_run_and_the_best_of_equally_long_ones():
    assert final_baseline_accuracy([10, 40, 20], [0.80, 0.88, 0.91]) == 0.88  # longest, not most accurate
    assert final_baseline_accuracy([10, 40, 40], [0.80, 0.88, 0.89]) == 0.89  # tie on time: more accurate
    assert final_baseline_accuracy([10, math.nan, 0], [0.80, 0.95, 0.99]) == 0.80  # NaN / zero times skipped
    assert math.isnan(final_baseline_accuracy([], []))
