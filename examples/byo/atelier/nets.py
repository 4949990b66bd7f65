"""ConvMixer (Trockman & Kolter 2022, "Patches Are All You Need?"), small enough to train on a CPU.

The image is cut into ``patch_size`` x ``patch_size`` patches by one strided convolution, then ``depth``
blocks mix the patch grid spatially (a depthwise ``kernel_size`` conv, with a residual connection) and
across channels (a pointwise conv), every conv followed by GELU and BatchNorm as in the paper. The grid
keeps its size from the first block to the last (an isotropic net), so the cost per image is set by
``width``, ``depth`` and the grid size (image_size / patch_size) squared.
"""
from __future__ import annotations

from torch import Tensor, nn


class Residual(nn.Module):
    def __init__(self, block: nn.Module):
        super().__init__()
        self.block = block

    def forward(self, x: Tensor) -> Tensor:
        return x + self.block(x)


def mixer_block(width: int, kernel_size: int) -> nn.Sequential:
    """Spatial mixing (depthwise, residual), then channel mixing (pointwise)."""
    return nn.Sequential(
        # odd kernel, padding k // 2: the grid keeps its size, as the residual needs
        Residual(nn.Sequential(nn.Conv2d(width, width, kernel_size, padding=kernel_size // 2, groups=width),
                               nn.GELU(), nn.BatchNorm2d(width))),
        nn.Conv2d(width, width, kernel_size=1),
        nn.GELU(),
        nn.BatchNorm2d(width),
    )


class ConvMixer(nn.Module):
    def __init__(self, num_classes: int, in_channels: int, width: int, depth: int, kernel_size: int,
                 patch_size: int):
        super().__init__()
        self.patch_embedding = nn.Sequential(
            nn.Conv2d(in_channels, width, kernel_size=patch_size, stride=patch_size), nn.GELU(), nn.BatchNorm2d(width))
        self.blocks = nn.Sequential(*(mixer_block(width, kernel_size) for _ in range(depth)))
        self.pool = nn.AdaptiveAvgPool2d(1)  # any grid size: progressive resizing may shrink the images
        self.head = nn.Linear(width, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.pool(self.blocks(self.patch_embedding(x))).flatten(1))


def convmixer(num_classes: int, in_channels: int, image_size: int, width: int = 64, depth: int = 4,
              kernel_size: int = 5, patch_size: int = 2) -> nn.Module:
    """A ConvMixer of ``depth`` blocks of ``width`` channels on a grid of ``patch_size``-pixel patches.

    recipesearch calls it with the data's ``num_classes``, ``in_channels`` and ``image_size``; the other
    arguments are the options a recipe writes beside the name (``model: {name: ..., depth: 6}``). An
    option that is not an argument here is refused by recipesearch before anything trains; a value that
    makes no net is refused here, and recipesearch reports the ValueError's message as one line.
    """
    for option, value in (("width", width), ("depth", depth), ("kernel_size", kernel_size),
                          ("patch_size", patch_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{option} must be an integer >= 1, got {value!r}")
    if kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be odd (the grid keeps its size), got {kernel_size}")
    if patch_size > image_size:
        raise ValueError(f"patch_size {patch_size} is larger than the {image_size}-pixel images")
    return ConvMixer(num_classes, in_channels, width, depth, kernel_size, patch_size)
