"""ResNet-9 of the fast CIFAR-10 entries (D. Page, "How to train your ResNet", Myrtle.ai 2018; airbench lineage).

prep conv(w) -> layer1 conv(2w)+pool+residual -> layer2 conv(4w)+pool -> layer3 conv(8w)+pool+residual
-> global max pool -> x scale -> fc. With w=64 this is Page's 6.5M-parameter DAWNBench net; smaller ``width``
makes it practical on a CPU.
"""
from __future__ import annotations

from torch import Tensor, nn

from recipesearch.errors import ConfigError
from recipesearch.models.blocks import ResidualBlock, conv_bn_relu, max_pool_if_fits
from recipesearch.models.registry import register_model


class ResNet9(nn.Module):
    def __init__(
        self,
        num_classes: int,
        in_channels: int = 3,
        image_size: int = 32,
        width: int = 64,
        scale: float = 0.125,
        pool: str = "max",
    ):
        super().__init__()
        w = width
        size = image_size
        self.prep = conv_bn_relu(in_channels, w)
        pool1, size = max_pool_if_fits(size)
        self.layer1 = nn.Sequential(*conv_bn_relu(w, 2 * w), pool1, _residual(2 * w))
        pool2, size = max_pool_if_fits(size)
        self.layer2 = nn.Sequential(*conv_bn_relu(2 * w, 4 * w), pool2)
        pool3, size = max_pool_if_fits(size)
        self.layer3 = nn.Sequential(*conv_bn_relu(4 * w, 8 * w), pool3, _residual(8 * w))
        # Page pools with a 4x4 max-pool on the final 4x4 map; the adaptive form is the same there
        # and also works for other input sizes.
        self.pool = nn.AdaptiveMaxPool2d(1) if pool == "max" else nn.AdaptiveAvgPool2d(1)
        # Page multiplies the logits by 0.125 (a fixed softmax temperature). Scaling the features before
        # ``fc`` is the same for the weights but keeps ``fc`` the last module and its bias in logit
        # units, so a loss that initialises the classifier bias (bce_loss) sees true logits.
        self.scale = scale
        self.fc = nn.Linear(8 * w, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        x = self.layer3(self.layer2(self.layer1(self.prep(x))))
        return self.fc(self.pool(x).flatten(1) * self.scale)


def _residual(channels: int) -> ResidualBlock:
    # Page's residual: x + relu(bn(conv(relu(bn(conv(x)))))): the branch ends with its ReLU and
    # nothing follows the sum, hence act=Identity.
    branch = nn.Sequential(*conv_bn_relu(channels, channels), *conv_bn_relu(channels, channels))
    return ResidualBlock(branch, nn.Identity(), nn.Identity())


@register_model("resnet9", description="ResNet-9 of the fast CIFAR-10 entries (Page 2018), 6.5M params at width 64")
def resnet9(num_classes: int, in_channels: int, image_size: int, width: int = 64, scale: float = 0.125,
            pool: str = "max") -> nn.Module:
    """ResNet-9 (D. Page, "How to train your ResNet", Myrtle.ai 2018); ``width`` is the prep-layer width."""
    if not (isinstance(width, int) and width >= 1):
        raise ConfigError("model.width", f"must be an integer >= 1, got {width!r}")
    if not scale > 0:
        raise ConfigError("model.scale", f"must be > 0, got {scale!r}")
    if pool not in ("max", "avg"):
        raise ConfigError("model.pool", f"must be 'max' or 'avg', got {pool!r}")
    return ResNet9(num_classes, in_channels, image_size, width, scale, pool)
