"""Building blocks shared by our own models; ``ResidualBlock`` is the hook point for block-level algorithms.

Stochastic depth (Huang et al. 2016) replaces ``block.branch`` with a dropping wrapper and
squeeze-excite (Hu et al. 2018) appends an SE module to it, so every residual block of our models is a
``ResidualBlock`` whose ``branch`` is an ``nn.Sequential``: algorithms never need to know the model.
"""
from __future__ import annotations

from torch import Tensor, nn


class ResidualBlock(nn.Module):
    """``act(shortcut(x) + branch(x))``.

    ``branch``: the residual path (an ``nn.Sequential``, so algorithms can append to it).
    ``shortcut``: identity, or a 1x1 conv + BN projection when the shape changes.
    ``act``: applied after the sum; ReLU for post-activation blocks (He et al. 2016), Identity where
    the branch ends with its own activation (ResNet-9).
    """

    def __init__(self, branch: nn.Module, shortcut: nn.Module | None = None, act: nn.Module | None = None):
        super().__init__()
        self.branch = branch
        self.shortcut = shortcut if shortcut is not None else nn.Identity()
        # Not in-place: the sum may alias a tensor that a wrapped branch keeps for its backward.
        self.act = act if act is not None else nn.ReLU()

    def forward(self, x: Tensor) -> Tensor:
        return self.act(self.shortcut(x) + self.branch(x))


def conv_bn(in_channels: int, out_channels: int, kernel_size: int = 3, stride: int = 1) -> nn.Sequential:
    """Conv (no bias: BN's shift replaces it) followed by BatchNorm; 'same' padding for odd kernels."""
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding=kernel_size // 2, bias=False),
        nn.BatchNorm2d(out_channels),
    )


def conv_bn_relu(in_channels: int, out_channels: int, kernel_size: int = 3, stride: int = 1) -> nn.Sequential:
    """``conv_bn`` followed by ReLU."""
    return nn.Sequential(*conv_bn(in_channels, out_channels, kernel_size, stride), nn.ReLU(inplace=True))


def projection(in_channels: int, out_channels: int, stride: int = 1) -> nn.Module:
    """Shortcut for a block: identity when shapes match, else 1x1 conv + BN (He et al. 2016, option B)."""
    if stride == 1 and in_channels == out_channels:
        return nn.Identity()
    return conv_bn(in_channels, out_channels, kernel_size=1, stride=stride)


def basic_block(in_channels: int, out_channels: int, stride: int = 1) -> ResidualBlock:
    """Two 3x3 conv-BN layers with ReLU between and after the sum (He et al. 2016, Fig. 2 left)."""
    branch = nn.Sequential(
        *conv_bn_relu(in_channels, out_channels, 3, stride),
        *conv_bn(out_channels, out_channels, 3, 1),
    )
    return ResidualBlock(branch, projection(in_channels, out_channels, stride), nn.ReLU())


def last_batchnorm(module: nn.Module) -> nn.BatchNorm2d | None:
    """The last BatchNorm2d inside ``module`` (the one whose gamma zero-init-residual sets to 0)."""
    found = None
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            found = m
    return found


def max_pool_if_fits(size: int) -> tuple[nn.Module, int]:
    """2x2 max-pool and the new side length, or Identity when the map is already 1 pixel wide.

    Lets the same network accept 8x8 and 32x32 inputs without pooling a 1x1 map to nothing.
    """
    if size < 2:
        return nn.Identity(), size
    return nn.MaxPool2d(2), size // 2
