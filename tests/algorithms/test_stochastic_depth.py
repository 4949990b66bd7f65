from __future__ import annotations

import copy
import math

import pytest
import torch
from torch import nn

from recipesearch.algorithms.stochastic_depth import DropPath, apply_stochastic_depth, drop_rates
from recipesearch.errors import ConfigError
from recipesearch.models.blocks import ResidualBlock, basic_block
from recipesearch.train.loop import fit


def _net(blocks: int = 4) -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), *[basic_block(8, 8) for _ in range(blocks)])


def test_rates_increase_linearly_with_depth():
    assert drop_rates(4, 0.2) == pytest.approx([0.05, 0.1, 0.15, 0.2])
    assert drop_rates(3, 0.2, "uniform") == [0.2, 0.2, 0.2]
    net = _net(4)
    wrappers = apply_stochastic_depth(net, drop_rate=0.2)
    blocks = [m for m in net.modules() if isinstance(m, ResidualBlock)]
    assert [b.branch for b in blocks] == wrappers  # every branch wrapped, in depth order
    assert [w.drop_rate for w in wrappers] == pytest.approx([0.05, 0.1, 0.15, 0.2])


def test_eval_is_identical_to_the_unwrapped_model():
    net = _net().eval()
    reference = copy.deepcopy(net)
    apply_stochastic_depth(net, drop_rate=0.5)
    x = torch.randn(4, 3, 8, 8)
    torch.testing.assert_close(net.eval()(x), reference(x))


def test_training_drops_whole_branches_per_sample():
    torch.manual_seed(0)
    block = basic_block(4, 4).eval()  # eval BN: the branch is a fixed function of its input
    branch = block.branch
    x = torch.randn(256, 4, 5, 5)
    full = branch(x)
    p = 0.75
    wrapper = DropPath(branch, p).train()
    branch.eval()  # keep BN in eval so only the drop is random
    out = wrapper(x)
    dropped = (out == 0).flatten(1).all(1)
    kept = torch.isclose(out, full / (1 - p), atol=1e-6).flatten(1).all(1)
    assert bool((dropped | kept).all())  # every sample is either dropped or kept and rescaled
    assert 0.6 < dropped.float().mean().item() < 0.9
    # Expectation preserved: the mean over samples approaches the branch's.
    assert out.mean().item() == pytest.approx(full.mean().item(), abs=0.05)


def test_block_method_drops_the_whole_batch_and_keeps_shapes():
    torch.manual_seed(0)
    block = basic_block(4, 8, stride=2)  # projection shortcut: the zero must broadcast against it
    apply_stochastic_depth(nn.Sequential(block), drop_rate=0.99, drop_distribution="uniform", method="block")
    block.train()
    x = torch.randn(2, 4, 6, 6)
    out = block(x)
    torch.testing.assert_close(out, block.act(block.shortcut(x)))
    assert out.shape == (2, 8, 3, 3)


def test_model_without_residual_blocks_is_a_config_error():
    with pytest.raises(ConfigError, match="no residual blocks"):
        apply_stochastic_depth(nn.Sequential(nn.Conv2d(3, 3, 1)), model_name="cnn")


def test_trains(tiny_recipe):
    recipe = tiny_recipe({"stochastic_depth": {"drop_rate": 0.2}}, model={"name": "resnet8", "width": 0.5})
    result = fit(recipe)
    assert math.isfinite(result.loss)
    assert result.accuracy > 0.2
