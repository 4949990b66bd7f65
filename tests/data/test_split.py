"""Stratified selection: exact totals, per-class quotas (largest remainder), permutation order."""
from __future__ import annotations

import torch

from recipesearch.data.split import class_quotas, fraction_count, stratified_mask


def test_quotas_sum_to_total_and_follow_largest_remainder():
    assert class_quotas(torch.tensor([10, 10, 10]), 10).tolist() == [4, 3, 3]
    assert class_quotas(torch.tensor([1, 2, 7]), 5).tolist() == [1, 1, 3]  # 0.5, 1, 3.5: tie to lower class
    assert class_quotas(torch.tensor([2, 3, 5]), 3).tolist() == [1, 1, 1]  # 0.6, 0.9, 1.5: +1 to .9 and .6
    assert class_quotas(torch.tensor([5, 5]), 0).tolist() == [0, 0]


def test_mask_takes_earliest_in_order_per_class():
    labels = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    order = torch.tensor([7, 6, 5, 4, 3, 2, 1, 0])
    mask = stratified_mask(labels, order, 4)
    assert mask.nonzero().squeeze(1).tolist() == [2, 3, 6, 7]


def test_fraction_count_rounds_half_up():
    assert fraction_count(5, 0.5) == 3 and fraction_count(1797, 0.2) == 359 and fraction_count(10, 0.0) == 0
