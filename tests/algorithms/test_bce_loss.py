"""BCE loss: per-class binary cross-entropy summed over classes, classifier bias starts at -log(K)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from recipesearch.algorithms.bce_loss import bce_loss, last_linear
from recipesearch.algorithms.selective_backprop import PER_SAMPLE_LOSS_KEY
from recipesearch.train.loop import Trainer, fit


def _by_hand(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    p = torch.sigmoid(logits)
    per_class = -(targets * torch.log(p) + (1 - targets) * torch.log(1 - p))
    return per_class.sum() / logits.shape[0]


def test_value_is_the_class_sum_averaged_over_the_batch() -> None:
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 4, generator=g)
    labels = torch.tensor([0, 3, 1, 1, 2, 0])
    expected = _by_hand(logits, F.one_hot(labels, 4).float())
    torch.testing.assert_close(bce_loss(logits, labels, 4), expected)
    # not averaged over classes: K times PyTorch's default mean reduction
    torch.testing.assert_close(bce_loss(logits, labels, 4),
                               4 * F.binary_cross_entropy_with_logits(logits, F.one_hot(labels, 4).float()))


def test_soft_targets() -> None:
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(5, 3, generator=g)
    soft = torch.softmax(torch.randn(5, 3, generator=g), 1)
    torch.testing.assert_close(bce_loss(logits, soft, 3), _by_hand(logits, soft))


def test_init_sets_loss_and_classifier_bias(tiny_recipe) -> None:
    trainer = Trainer(tiny_recipe({"bce_loss": {}}))
    s = trainer.state
    fc = last_linear(s.model)
    torch.testing.assert_close(fc.bias.detach(), torch.full_like(fc.bias, -math.log(10)))
    logits = torch.randn(3, 10)
    labels = torch.tensor([1, 2, 3])
    torch.testing.assert_close(s.loss_fn(logits, labels), bce_loss(logits, labels, 10))
    assert PER_SAMPLE_LOSS_KEY in s.extra  # selective backprop ranks by the loss being trained
    x = torch.zeros(4, 1, 16, 16)
    s.model.eval()
    with torch.no_grad():
        mean_prob = torch.sigmoid(s.model(x)).mean().item()
    assert abs(mean_prob - 1 / 11) < 0.05  # sigmoid(-log K) = 1 / (K + 1) ≈ 1 / K


def test_bias_left_alone_when_disabled(tiny_recipe) -> None:
    torch.manual_seed(0)
    trainer = Trainer(tiny_recipe({"bce_loss": {"init_bias": False}}))
    assert not torch.allclose(last_linear(trainer.state.model).bias, torch.tensor(-math.log(10)))


def test_short_training_run(tiny_recipe) -> None:
    result = fit(tiny_recipe({"bce_loss": {}}, batch_size=32, max_duration=2))
    assert math.isfinite(result.loss) and result.accuracy > 0.3
