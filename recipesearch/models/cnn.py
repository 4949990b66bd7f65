"""A small plain CNN (three conv-BN-ReLU layers with max-pooling), the fast CPU baseline.

Shape after the VGG recipe (Simonyan & Zisserman 2015): widths double as the map halves.
"""
from __future__ import annotations

from torch import Tensor, nn

from recipesearch.errors import ConfigError
from recipesearch.models.blocks import conv_bn_relu, max_pool_if_fits
from recipesearch.models.registry import register_model


class SimpleCNN(nn.Module):
    """conv(w)-pool -> conv(2w)-pool -> conv(4w) -> global avg pool -> fc."""

    def __init__(self, num_classes: int, in_channels: int = 3, image_size: int = 32, width: int = 32):
        super().__init__()
        pool1, size = max_pool_if_fits(image_size)
        pool2, size = max_pool_if_fits(size)
        self.features = nn.Sequential(
            *conv_bn_relu(in_channels, width), pool1,
            *conv_bn_relu(width, 2 * width), pool2,
            *conv_bn_relu(2 * width, 4 * width),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(4 * width, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(self.pool(self.features(x)).flatten(1))


@register_model("cnn", description="small plain CNN (3 conv-BN-ReLU layers), fast on CPU")
def cnn(num_classes: int, in_channels: int, image_size: int, width: int = 32) -> nn.Module:
    """Plain VGG-style CNN (Simonyan & Zisserman 2015), three layers of width/2x/4x ``width``."""
    if not (isinstance(width, int) and width >= 1):
        raise ConfigError("model.width", f"must be an integer >= 1, got {width!r}")
    return SimpleCNN(num_classes, in_channels, image_size, width)
