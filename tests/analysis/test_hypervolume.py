from __future__ import annotations

import itertools

import numpy as np
import pytest

from recipesearch.analysis import (
    hypervolume,
    hypervolume_history,
    hypervolume_vs_compute,
    reference_point,
)

MIN2 = ["minimize", "minimize"]
MIN3 = ["minimize"] * 3
ACC_TIME = ["maximize", "minimize"]


def test_single_point_is_a_rectangle():
    assert hypervolume([[1, 2]], MIN2, [4, 5]) == pytest.approx(9.0)
    # accuracy 0.9 above reference 0.5, time 10 below reference 20: 0.4 * 10.
    assert hypervolume([[0.9, 10]], ACC_TIME, [0.5, 20]) == pytest.approx(4.0)


def test_two_overlapping_boxes():
    # [1,4]x[3,4] (3) + [2,4]x[1,4] (6) - overlap [2,4]x[3,4] (2) = 7.
    assert hypervolume([[1, 3], [2, 1]], MIN2, [4, 4]) == pytest.approx(7.0)


def test_three_point_staircase():
    # Columns of width 1: heights 1, 2, 3.
    assert hypervolume([[1, 3], [2, 2], [3, 1]], MIN2, [4, 4]) == pytest.approx(6.0)


def test_duplicates_not_double_counted():
    assert hypervolume([[1, 3], [1, 3], [2, 1], [2, 1]], MIN2, [4, 4]) == pytest.approx(7.0)


def test_points_not_strictly_dominating_reference_ignored():
    pts = [[1, 3], [2, 1], [5, 0], [0, 4], [np.nan, 0.5], [4, 4]]
    assert hypervolume(pts, MIN2, [4, 4]) == pytest.approx(7.0)
    assert hypervolume([[5, 5]], MIN2, [4, 4]) == 0.0
    assert hypervolume([], MIN2, [4, 4]) == 0.0


def test_three_dimensions_by_hand():
    assert hypervolume([[1, 1, 1]], MIN3, [3, 4, 5]) == pytest.approx(24.0)
    # Boxes of volume 2 each; pairwise overlaps are the cell [1,2]^3, as is the triple overlap.
    assert hypervolume([[0, 1, 1], [1, 0, 1]], MIN3, [2, 2, 2]) == pytest.approx(3.0)
    assert hypervolume([[0, 1, 1], [1, 0, 1], [1, 1, 0]], MIN3, [2, 2, 2]) == pytest.approx(4.0)


def test_one_objective():
    assert hypervolume([[3], [5]], ["minimize"], [10]) == pytest.approx(7.0)


def _grid_volume(points: np.ndarray, ref: np.ndarray) -> int:
    """Count unit cells [c, c+1) below ref whose lower corner is weakly dominated by a point."""
    count = 0
    for c in itertools.product(*(range(int(r)) for r in ref)):
        if (points <= np.array(c)).all(axis=1).any():
            count += 1
    return count


@pytest.mark.parametrize("k", [2, 3, 4])
def test_random_integer_points_match_grid_count(k):
    rng = np.random.default_rng(k)
    for _ in range(40):
        n = int(rng.integers(1, 9))
        pts = rng.integers(0, 7, size=(n, k)).astype(float)
        ref = rng.integers(3, 8, size=k).astype(float)
        expected = _grid_volume(pts[(pts < ref).all(axis=1)], ref)
        assert hypervolume(pts, ["minimize"] * k, ref) == pytest.approx(expected)
        # Same problem with every objective maximised (negated coordinates and reference).
        assert hypervolume(-pts, ["maximize"] * k, -ref) == pytest.approx(expected)


def test_reference_point_default():
    pts = [[0.8, 10], [0.9, 30], [0.6, 20], [np.nan, 5]]
    # acc: 0.6 - 0.1 * 0.3; time: 30 + 0.1 * 20.
    assert reference_point(pts, ACC_TIME) == pytest.approx([0.57, 32.0])


def test_reference_point_accuracy_clipped_at_zero():
    assert reference_point([[0.05, 1], [0.95, 2]], ACC_TIME) == pytest.approx([0.0, 2.1])


def test_reference_point_zero_range():
    assert reference_point([[0.5, 10]], ACC_TIME) == pytest.approx([0.45, 11.0])
    assert reference_point([[0.5, 0.0]], ACC_TIME) == pytest.approx([0.45, 0.1])
    # A maximised objective with negative values may go further below 0 (no clipping).
    assert reference_point([[-2.0, 1.0]], ACC_TIME) == pytest.approx([-2.2, 1.1])


def test_reference_point_without_completed_trials():
    ref = reference_point([[np.nan, 1.0]], ACC_TIME)
    assert np.isnan(ref).all() and ref.shape == (2,)
    assert np.isnan(hypervolume([[0.5, 1.0]], ACC_TIME, ref))


def test_history_by_hand():
    pts = [[0.5, 50], [np.nan, np.nan], [0.4, 60], [0.6, 80], [0.7, 20]]
    got = hypervolume_history(pts, ACC_TIME, [0.0, 100.0])
    # 0.5*50; failed keeps; dominated keeps; +0.1*20; (0.7, 20) dominates all: 0.7*80.
    assert got == pytest.approx([25.0, 25.0, 25.0, 27.0, 56.0])


def test_history_starts_at_zero_and_is_monotone_and_exact():
    rng = np.random.default_rng(1)
    for k in (2, 3):
        pts = rng.random((60, k))
        pts[rng.random(60) < 0.2] = np.nan
        ref = np.full(k, 0.9)
        dirs = ["minimize"] * k
        hist = hypervolume_history(pts, dirs, ref)
        assert (np.diff(hist) >= -1e-12).all()
        assert hist == pytest.approx([hypervolume(pts[: i + 1], dirs, ref) for i in range(60)])
    assert hypervolume_history([[np.nan, np.nan], [5.0, 5.0]], MIN2, [4, 4]).tolist() == [0.0, 0.0]


def test_history_default_reference_is_reference_point():
    pts = np.array([[0.8, 10], [0.9, 30], [0.6, 20]])
    ref = reference_point(pts, ACC_TIME)
    assert hypervolume_history(pts, ACC_TIME) == pytest.approx(hypervolume_history(pts, ACC_TIME, ref))


def test_hypervolume_vs_compute_counts_failed_time():
    pts = [[0.5, 50], [np.nan, np.nan], [0.4, 60], [0.6, 80], [0.7, 20]]
    curve = hypervolume_vs_compute(pts, [10, np.nan, 5, 20, 1], ACC_TIME, [0.0, 100.0])
    assert curve.cumulative_seconds.tolist() == [10, 10, 15, 35, 36]
    assert curve.hypervolume == pytest.approx([25.0, 25.0, 25.0, 27.0, 56.0])
    with pytest.raises(ValueError):
        hypervolume_vs_compute(pts, [1, 2], ACC_TIME, [0.0, 100.0])
