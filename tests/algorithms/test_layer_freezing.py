from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from recipesearch.algorithms.layer_freezing import freeze_fraction, freeze_layers, trainable_layers
from recipesearch.train.loop import Trainer
from recipesearch.train.optim import DecoupledSGDW


def test_schedule_is_zero_then_linear_to_freeze_level():
    assert freeze_fraction(0.5, 0.5, 1.0) == 0.0
    assert freeze_fraction(0.75, 0.5, 1.0) == pytest.approx(0.5)
    assert freeze_fraction(1.0, 0.5, 0.8) == pytest.approx(0.8)


def _step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor) -> None:
    opt.zero_grad(set_to_none=True)
    model(x).square().mean().backward()
    opt.step()


def test_frozen_params_stop_changing_while_later_ones_train():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8),
                          nn.Linear(8, 1))
    # Momentum and decoupled weight decay are what would keep moving a param whose grad is merely zero.
    opt = DecoupledSGDW(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)
    x = torch.randn(16, 4)
    for _ in range(3):
        _step(model, opt, x)
    assert freeze_layers(model, opt, 0.5) == 2  # 4 layers own parameters: the first two freeze
    early = [p.detach().clone() for p in model[0].parameters()] + [p.detach().clone() for p in model[2].parameters()]
    late = [p.detach().clone() for p in model[5].parameters()]
    for _ in range(3):
        _step(model, opt, x)
    now_early = list(model[0].parameters()) + list(model[2].parameters())
    assert all(torch.equal(a, b) for a, b in zip(early, now_early))
    assert all(p.grad is None and not p.requires_grad and p not in opt.state for p in now_early)
    assert not any(torch.equal(a, b) for a, b in zip(late, model[5].parameters()))


def test_classifier_is_never_frozen():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    assert freeze_layers(model, None, 1.0) == 1
    assert all(p.requires_grad for p in model[1].parameters())
    assert len(trainable_layers(model)) == 2


def test_fit_freezes_early_layers_in_the_second_half(tiny_recipe):
    trainer = Trainer(tiny_recipe({"layer_freezing": {"freeze_start": 0.5, "freeze_level": 0.5}}))
    result = trainer.fit()
    model = trainer.state.model
    layers = trainable_layers(model)
    frozen = [not any(p.requires_grad for p in m.parameters(recurse=False)) for m in layers]
    # By the end, int(0.5 * L) of the L layers are frozen, earliest first.
    assert frozen == [i < int(0.5 * len(layers)) for i in range(len(layers))]
    assert math.isfinite(result.loss)
    assert result.accuracy > 0.2
