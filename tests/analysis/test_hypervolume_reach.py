"""recipesearch/analysis/hypervolume_reach.py: first crossings of hypervolume curves and the seed bootstrap."""
from __future__ import annotations

import math

import numpy as np

from recipesearch.analysis.hypervolume_reach import (
    bootstrap_compute_ratio,
    first_reach,
    on_grid,
    quantiles_with_inf,
    reaches,
)


def test_first_reach_is_the_first_time_at_or_above_the_target():
    assert first_reach([1.0, 2.0, 3.0], [0.1, 0.5, 0.9], 0.5) == 2.0
    assert first_reach([1.0, 2.0, 3.0], [0.1, 0.5, 0.9], 0.95) == math.inf


def test_a_hypervolume_short_of_the_target_by_rounding_still_reaches_it():
    assert reaches(0.3 - 1e-15, 0.3)
    assert not reaches(0.3 * (1 - 1e-9), 0.3)


def test_on_grid_holds_zero_before_the_first_point_and_the_last_value_after():
    got = on_grid([(np.array([1.0, 3.0]), np.array([0.2, 0.6]))], np.array([0.0, 1.0, 2.0, 3.0, 9.0]))
    assert got.tolist() == [[0.0, 0.2, 0.2, 0.6, 0.6]]


def test_quantiles_keep_never_reached_as_inf_where_it_decides():
    assert quantiles_with_inf([1.0, 2.0, math.inf, math.inf], (0, 100)) == [1.0, math.inf]


def test_the_bootstrap_of_an_arm_against_itself_brackets_one():
    grid = np.linspace(0, 10, 101)
    runs = on_grid([(np.array([1.0 + s, 5.0 + s]), np.array([0.5, 1.0])) for s in range(4)], grid)
    final = runs[:, -1]
    low, high = bootstrap_compute_ratio(runs, runs, final, grid, n=200)
    assert low <= 1.0 <= high
    faster = on_grid([(np.array([0.5, 2.0]), np.array([0.5, 1.0]))] * 4, grid)
    low, high = bootstrap_compute_ratio(faster, runs, final, grid, n=200)
    assert high < 1.0
