from __future__ import annotations

import torch
from torch import nn

from recipesearch.models.blocks import (
    ResidualBlock,
    basic_block,
    conv_bn,
    last_batchnorm,
    max_pool_if_fits,
    projection,
)


def test_forward_is_act_of_shortcut_plus_branch() -> None:
    torch.manual_seed(0)
    branch = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.BatchNorm2d(8))
    shortcut = conv_bn(4, 8, kernel_size=1)
    block = ResidualBlock(branch, shortcut, nn.Tanh())
    x = torch.randn(2, 4, 6, 6)
    torch.testing.assert_close(block(x), torch.tanh(shortcut(x) + branch(x)))


def test_defaults_are_identity_shortcut_and_relu() -> None:
    block = ResidualBlock(nn.Sequential(nn.Identity()))
    assert isinstance(block.shortcut, nn.Identity) and isinstance(block.act, nn.ReLU)
    x = torch.randn(3, 2, 4, 4)
    torch.testing.assert_close(block(x), torch.relu(2 * x))


def test_basic_block_projects_only_when_the_shape_changes() -> None:
    assert isinstance(basic_block(16, 16, 1).shortcut, nn.Identity)
    for block in (basic_block(16, 32, 2), basic_block(16, 32, 1), basic_block(16, 16, 2)):
        conv = block.shortcut[0]
        assert isinstance(conv, nn.Conv2d) and conv.kernel_size == (1, 1)
    out = basic_block(16, 32, 2)(torch.randn(2, 16, 8, 8))
    assert out.shape == (2, 32, 4, 4)
    assert isinstance(projection(8, 8), nn.Identity)


def test_basic_block_branch_is_flat_and_ends_with_bn() -> None:
    block = basic_block(8, 8)
    assert isinstance(block.branch, nn.Sequential)
    assert block.branch[-1] is last_batchnorm(block.branch)


def test_conv_bn_keeps_spatial_size() -> None:
    for k in (1, 3, 5):
        assert conv_bn(3, 5, k)(torch.randn(2, 3, 7, 7)).shape == (2, 5, 7, 7)
    assert conv_bn(3, 5, 3, stride=2)(torch.randn(2, 3, 8, 8)).shape == (2, 5, 4, 4)


def test_max_pool_if_fits() -> None:
    pool, size = max_pool_if_fits(7)
    assert isinstance(pool, nn.MaxPool2d) and size == 3
    pool, size = max_pool_if_fits(1)
    assert isinstance(pool, nn.Identity) and size == 1
