"""Pool before BatchNorm: conv, BN, act, max-pool runs become conv, max-pool, BN, act; with a positive BN scale the
network computes the same function (max-pooling commutes with a monotone affine map and ReLU), on a quarter of the
pixels for BN and the activation."""
from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from recipesearch.algorithms.blurpool import BlurMaxPool2d
from recipesearch.algorithms.pool_before_norm import pool_before_norm
from recipesearch.errors import ConfigError
from recipesearch.train.loop import Trainer, fit


def _net() -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),       # reordered
        nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.GELU(), nn.MaxPool2d(2)),  # nested
        # an average does not commute with ReLU: kept
        nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.AvgPool2d(2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 3),
    )


def _types(seq: nn.Sequential) -> list[str]:
    return [type(m).__name__ for m in seq]


def test_reorders_every_block_in_place_and_keeps_the_parameters() -> None:
    net = _net()
    params = [id(p) for p in net.parameters()]
    assert pool_before_norm(net) == 2
    assert _types(net)[:4] == ["Conv2d", "MaxPool2d", "BatchNorm2d", "ReLU"]
    assert _types(net[4]) == ["Conv2d", "MaxPool2d", "BatchNorm2d", "GELU"]
    assert _types(net)[5:9] == ["Conv2d", "BatchNorm2d", "ReLU", "AvgPool2d"]
    assert [id(p) for p in net.parameters()] == params  # same tensors, same order: optimizers, layer freezing
    assert pool_before_norm(net) == 0  # already reordered: nothing left to match


def test_same_function_with_relu_and_a_positive_scale() -> None:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2))
    with torch.no_grad():  # running statistics and a positive scale, as after some training
        net[1].running_mean.normal_()
        net[1].running_var.uniform_(0.5, 2)
        net[1].weight.uniform_(0.5, 2)
        net[1].bias.normal_()
    net.eval()
    reordered = copy.deepcopy(net)
    pool_before_norm(reordered)
    x = torch.randn(4, 3, 12, 12)
    with torch.no_grad():
        torch.testing.assert_close(reordered(x), net(x))
        net[1].weight.neg_()  # the check is not vacuous: a negative scale does not commute with the max
        reordered[2].weight.neg_()
        assert not torch.allclose(reordered(x), net(x))


def test_the_trainer_reorders_before_blurpool(tiny_recipe) -> None:
    trainer = Trainer(tiny_recipe({"pool_before_norm": {}, "blurpool": {}}))
    features = trainer.state.model.features
    assert [type(m) for m in features][:4] == [nn.Conv2d, BlurMaxPool2d, nn.BatchNorm2d, nn.ReLU]
    assert fit(tiny_recipe({"pool_before_norm": {}})).steps > 0


def test_a_model_without_the_pattern_is_a_one_line_config_error(tiny_recipe) -> None:
    recipe = tiny_recipe({"pool_before_norm": {}}, model={"name": "resnet8"})  # no max-pool
    with pytest.raises(ConfigError, match=r"^algorithms\.pool_before_norm: model resnet8 has no conv") as err:
        fit(recipe)
    assert "\n" not in str(err.value)
