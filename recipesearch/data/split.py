"""Deterministic stratified selection used for the digits test split, validation splits and subsets.

Per-class quotas use the largest-remainder (Hamilton) method, so exactly ``round(fraction * N)`` samples
are selected while every class keeps its share; within a class the samples come in the order of a given
permutation, so the result depends only on the labels, the permutation and the fraction.
"""
from __future__ import annotations

import math

import torch


def class_quotas(counts: torch.Tensor, total: int) -> torch.Tensor:
    """Split ``total`` among classes in proportion to ``counts`` (largest remainder, ties to lower class)."""
    counts = counts.to(torch.float64)
    n = float(counts.sum())
    exact = counts * (total / n) if n else counts
    quotas = exact.floor().to(torch.int64)
    missing = total - int(quotas.sum())
    if missing > 0:
        # stable sort on -remainder: largest remainders first, lower class index first among ties
        order = torch.sort(-(exact - quotas), stable=True).indices
        quotas[order[:missing]] += 1
    return quotas


def stratified_mask(labels: torch.Tensor, order: torch.Tensor, count: int) -> torch.Tensor:
    """Boolean mask selecting ``count`` samples, stratified by ``labels``, earliest in ``order`` first.

    ``order`` is a permutation of ``range(len(labels))``; everything runs on CPU as tensor ops.
    """
    labels = labels.cpu()
    order = order.cpu()
    n = labels.numel()
    if not 0 <= count <= n:
        raise ValueError(f"cannot select {count} of {n} samples")
    num_classes = int(labels.max()) + 1 if n else 0
    counts = torch.bincount(labels, minlength=num_classes)
    quotas = class_quotas(counts, count)
    # 1) permute, 2) stable-sort by class so each class keeps the permuted order,
    # 3) rank inside the class, 4) keep ranks below the class quota
    permuted = labels[order]
    by_class = torch.sort(permuted, stable=True)
    starts = torch.cumsum(counts, 0) - counts
    rank = torch.arange(n) - starts[by_class.values]
    keep = rank < quotas[by_class.values]
    mask = torch.zeros(n, dtype=torch.bool)
    mask[order[by_class.indices[keep]]] = True
    return mask


def fraction_count(n: int, fraction: float) -> int:
    """``round(fraction * n)`` with halves rounded up (Python's round() goes to even)."""
    return int(math.floor(fraction * n + 0.5))
