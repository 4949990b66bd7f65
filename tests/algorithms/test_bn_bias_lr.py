"""BN-bias LR (Jordan 2024, airbench94's bias_scaler): scaling the BN biases' gradients by s is SGD with s x their LR
(momentum and Nesterov included), every other parameter's step unchanged; refused with AdamW."""
from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from recipesearch.algorithms.bn_bias_lr import bn_biases, scale_gradients
from recipesearch.errors import ConfigError
from recipesearch.train.loop import Trainer


def _net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3, bias=True), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                         nn.Linear(4 * 6 * 6, 5))


def test_finds_the_batchnorm_biases_only():
    model = _net()
    assert bn_biases(model) == [model[1].bias]  # not the conv's or the linear layer's bias
    model[1].bias.requires_grad_(False)
    assert bn_biases(model) == []


def test_scaled_gradients_are_sgd_with_a_larger_lr_for_the_biases():
    scale, lr = 8.0, 0.05
    scaled, by_groups = _net(), _net()
    opt_scaled = torch.optim.SGD(scaled.parameters(), lr=lr, momentum=0.85, nesterov=True)
    bias = by_groups[1].bias
    others = [p for p in by_groups.parameters() if p is not bias]
    opt_groups = torch.optim.SGD([{"params": others}, {"params": [bias], "lr": lr * scale}], lr=lr, momentum=0.85,
                                 nesterov=True)
    g = torch.Generator().manual_seed(1)
    for _ in range(4):
        x, y = torch.randn(8, 3, 8, 8, generator=g), torch.randint(0, 5, (8,), generator=g)
        for model, opt in ((scaled, opt_scaled), (by_groups, opt_groups)):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            if model is scaled:
                assert scale_gradients(bn_biases(model), scale) == 1
            opt.step()
    for a, b in zip(scaled.parameters(), by_groups.parameters()):
        torch.testing.assert_close(a, b)
    assert not torch.allclose(scaled[1].bias, _net()[1].bias)  # the biases did move


def test_first_trainer_step_moves_bn_biases_scale_times_as_far(tiny_recipe):
    # One step from the same start: the first step of (Nesterov) momentum SGD is linear in the gradient, so the BN
    # biases move exactly scale x as far and every other parameter exactly as far as without the method.
    one_step = 1 / 44  # digits: 1438 // 32 = 44 steps an epoch
    moved = {}
    for algorithms in ({}, {"bn_bias_lr": {"scale": 64}}):
        trainer = Trainer(tiny_recipe(algorithms, max_duration=one_step))
        start = copy.deepcopy(trainer.state.model.state_dict())
        trainer.train()
        assert trainer.state.step == 1
        moved[bool(algorithms)] = {k: v - start[k] for k, v in trainer.state.model.state_dict().items()
                                   if v.is_floating_point()}
    plain, scaled = moved[False], moved[True]
    biases = [k for k in plain if k.endswith(".bias") and k.replace(".bias", ".running_mean") in plain]
    assert biases
    for key in plain:
        if key in biases:
            torch.testing.assert_close(scaled[key], 64 * plain[key])
            assert plain[key].abs().sum() > 0
        else:
            torch.testing.assert_close(scaled[key], plain[key])


def test_refused_with_adamw_and_without_batchnorm(tiny_recipe):
    with pytest.raises(ConfigError, match="AdamW") as info:
        Trainer(tiny_recipe({"bn_bias_lr": {}}, optimizer={"name": "adamw", "lr": 1e-3}))
    assert info.value.field == "algorithms.bn_bias_lr"
    with pytest.raises(ConfigError, match="AdamW"):
        Trainer(tiny_recipe({"bn_bias_lr": {}}, optimizer={"name": "muon", "muon_rest": "adamw"}))
    Trainer(tiny_recipe({"bn_bias_lr": {}}, optimizer={"name": "muon"}))  # Muon's SGD part takes the biases
    trainer = Trainer(tiny_recipe({"bn_bias_lr": {}}, model={"name": "cnn", "width": 8}))
    for m in trainer.state.model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.bias.requires_grad_(False)
    with pytest.raises(ConfigError, match="no trainable BatchNorm bias"):
        trainer.fit()
