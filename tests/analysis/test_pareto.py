from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recipesearch.analysis import pareto_front_order, pareto_mask, pareto_mask_by_group

ACC_TIME = ("maximize", "minimize")


def test_ties_in_one_objective_are_dominated():
    # (0.9, 10) beats (0.9, 20) on time and (0.8, 10) on accuracy.
    pts = [[0.9, 10], [0.9, 20], [0.8, 10], [0.95, 30]]
    assert pareto_mask(pts, ACC_TIME).tolist() == [True, False, False, True]


def test_exact_duplicates_are_both_kept():
    pts = [[0.9, 10], [0.9, 10], [0.8, 20]]
    assert pareto_mask(pts, ACC_TIME).tolist() == [True, True, False]


def test_single_point_and_empty():
    assert pareto_mask([[0.5, 3.0]], ACC_TIME).tolist() == [True]
    for empty in ([], np.empty((0, 2))):
        m = pareto_mask(empty, ACC_TIME)
        assert m.shape == (0,) and m.dtype == bool


def test_all_dominated_chain():
    pts = [[3, 3], [1, 1], [2, 2]]
    assert pareto_mask(pts, ["minimize", "minimize"]).tolist() == [False, True, False]
    assert pareto_mask(pts, ["maximize", "maximize"]).tolist() == [True, False, False]


def test_nan_rows_never_on_front_and_never_dominate():
    pts = [[np.nan, 1.0], [0.5, 2.0], [0.4, np.nan], [np.nan, np.nan]]
    assert pareto_mask(pts, ACC_TIME).tolist() == [False, True, False, False]
    # A NaN row with an excellent time must not knock out a real point.
    assert pareto_mask([[np.nan, 0.0], [0.1, 100.0]], ACC_TIME).tolist() == [False, True]


def test_three_objectives():
    pts = [[1, 2, 3], [2, 1, 3], [1, 2, 4], [3, 3, 0], [1, 2, 3], [2, 2, 3]]
    got = pareto_mask(pts, ["minimize"] * 3)
    assert got.tolist() == [True, True, False, True, True, False]


def test_matches_naive_loop_beyond_one_block():
    rng = np.random.default_rng(0)
    pts = rng.integers(0, 30, size=(1300, 2)).astype(float)  # many ties and duplicates
    pts[::97] = np.nan
    dirs = ["maximize", "minimize"]
    v = pts * np.array([-1.0, 1.0])
    naive = []
    for p in v:
        if np.isnan(p).any():
            naive.append(False)
            continue
        ok = ~np.isnan(v).any(axis=1)
        dom = ok & (v <= p).all(axis=1) & (v < p).any(axis=1)
        naive.append(not dom.any())
    assert pareto_mask(pts, dirs).tolist() == naive


def test_bad_input_raises():
    with pytest.raises(ValueError, match="direction"):
        pareto_mask([[1, 2]], ["max", "minimize"])
    with pytest.raises(ValueError, match="shape"):
        pareto_mask([[1, 2, 3]], ACC_TIME)
    with pytest.raises(ValueError):
        pareto_mask([[1, 2]], "minimize")


def test_front_order_sorted_by_time():
    pts = [[0.9, 30], [0.7, 10], [0.8, 20], [0.6, 25]]
    assert pareto_front_order(pts, ACC_TIME).tolist() == [1, 2, 0]
    assert pareto_front_order([], ACC_TIME).tolist() == []


def test_front_order_time_ties_broken_by_accuracy():
    pts = [[0.8, 10], [0.8, 10], [0.9, 5]]
    assert pareto_front_order(pts, ACC_TIME).tolist() == [2]
    pts = [[0.7, 10], [0.7, 10], [0.9, 20]]
    assert pareto_front_order(pts, ACC_TIME).tolist() == [0, 1, 2]


def test_mask_by_group_keeps_index_alignment():
    df = pd.DataFrame(
        {"budget": [1, 2, 1, 2], "accuracy": [0.8, 0.75, 0.7, 0.9], "train_seconds": [10, 20, 12, 40]},
        index=[10, 11, 12, 13],
    )
    got = pareto_mask_by_group(df, ["accuracy", "train_seconds"], ACC_TIME, "budget")
    assert got.index.tolist() == [10, 11, 12, 13]
    assert got.tolist() == [True, True, False, True]
    # Over all budgets (0.75, 20) is dominated by (0.8, 10).
    overall = pareto_mask(df[["accuracy", "train_seconds"]].to_numpy(), ACC_TIME)
    assert overall.tolist() == [True, False, False, True]
