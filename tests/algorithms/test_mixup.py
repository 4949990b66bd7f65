"""MixUp: the pure function mixes a batch with a permutation of itself; the hook trains."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from recipesearch.algorithms import get_algorithm
from recipesearch.algorithms.mixup import mixup_batch, sample_beta
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.train.loop import fit


def _partner(targets: torch.Tensor) -> torch.Tensor:
    """Recover perm from targets when y = arange(B) and K = B: the class each sample was mixed with."""
    b = targets.shape[0]
    own = targets.diagonal()
    others = targets.clone()
    others.fill_diagonal_(-1)
    return torch.where(own > 1 - 1e-6, torch.arange(b), others.argmax(1))


def test_output_is_lam_x_plus_one_minus_lam_permuted_x() -> None:
    g = torch.Generator().manual_seed(0)
    b = 16
    x = torch.randn(b, 3, 8, 8, generator=g)
    y = torch.arange(b)
    x_mixed, targets, lam = mixup_batch(x, y, alpha=1.0, num_classes=b, generator=g)
    perm = _partner(targets)
    assert sorted(perm.tolist()) == list(range(b))  # a permutation of the batch
    assert 0.5 <= lam <= 1.0  # the original sample keeps the larger share
    torch.testing.assert_close(x_mixed, lam * x + (1 - lam) * x[perm])
    torch.testing.assert_close(targets.sum(1), torch.ones(b))
    moved = perm != torch.arange(b)
    torch.testing.assert_close(targets.diagonal()[moved], torch.full((int(moved.sum()),), lam))
    torch.testing.assert_close(targets[moved, perm[moved]], torch.full((int(moved.sum()),), 1 - lam))


def test_soft_targets_are_mixed_as_distributions() -> None:
    g = torch.Generator().manual_seed(1)
    y = torch.softmax(torch.randn(8, 5, generator=g), 1)
    _, targets, _ = mixup_batch(torch.randn(8, 1, 4, 4), y, alpha=0.2, num_classes=5, generator=g)
    torch.testing.assert_close(targets.sum(1), torch.ones(8))


def test_small_alpha_is_near_identity() -> None:
    g = torch.Generator().manual_seed(2)
    x = torch.randn(32, 3, 8, 8, generator=g)
    y = torch.randint(10, (32,), generator=g)
    x_mixed, targets, lam = mixup_batch(x, y, alpha=1e-3, num_classes=10, generator=g)
    assert lam > 0.99
    torch.testing.assert_close(x_mixed, x, atol=0.1, rtol=0)
    assert (targets.argmax(1) == y).all()


def test_lambda_follows_beta() -> None:
    g = torch.Generator().manual_seed(3)
    draws = torch.tensor([sample_beta(2.0, g) for _ in range(2000)])
    assert abs(draws.mean().item() - 0.5) < 0.02
    assert abs(draws.var().item() - 1 / (4 * 5)) < 0.01  # Var Beta(a, a) = 1 / (4 (2a + 1))
    spiky = torch.tensor([sample_beta(0.2, g) for _ in range(2000)])
    assert ((spiky < 0.1) | (spiky > 0.9)).float().mean() > 0.5  # small alpha: mostly near 0 or 1


def test_same_generator_same_mix() -> None:
    x, y = torch.randn(8, 1, 4, 4), torch.arange(8)
    a = mixup_batch(x, y, 0.2, 8, torch.Generator().manual_seed(5))
    b = mixup_batch(x, y, 0.2, 8, torch.Generator().manual_seed(5))
    assert a[2] == b[2] and torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_hook_turns_targets_into_distributions() -> None:
    algo = get_algorithm("mixup")()
    state = SimpleNamespace(x=torch.randn(8, 1, 4, 4), y=torch.randint(10, (8,)), num_classes=10)
    algo.apply(Event.AFTER_DATALOADER, state)
    assert state.y.shape == (8, 10)
    torch.testing.assert_close(state.y.sum(1), torch.ones(8))


def test_alpha_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="alpha"):
        get_algorithm("mixup")(alpha=0)


def test_short_training_run(tiny_recipe) -> None:
    result = fit(tiny_recipe({"mixup": {}}, batch_size=32, max_duration=2))
    assert math.isfinite(result.loss) and result.accuracy > 0.3
