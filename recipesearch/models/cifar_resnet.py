"""CIFAR ResNets with 6n+2 layers (He et al. 2016, "Deep Residual Learning", Sec. 4.2).

Three stages of n basic blocks at widths 16/32/64 on 32x32, 16x16 and 8x8 maps, global average pooling,
then ``fc``. Shortcuts that change shape are 1x1 conv + BN projections (option B); the paper's CIFAR
nets use zero-padding (option A), so these have 2.8k more parameters (resnet20: 272,474 vs 269,722).
"""
from __future__ import annotations

from torch import Tensor, nn

from recipesearch.errors import ConfigError
from recipesearch.models.blocks import ResidualBlock, basic_block, conv_bn_relu, last_batchnorm
from recipesearch.models.registry import register_model

_BASE_WIDTHS = (16, 32, 64)


class CifarResNet(nn.Module):
    """stem (3x3 conv-BN-ReLU) -> 3 stages of ``blocks_per_stage`` basic blocks -> avgpool -> fc."""

    def __init__(
        self,
        blocks_per_stage: int,
        num_classes: int,
        in_channels: int = 3,
        width: float = 1.0,
        zero_init_residual: bool = True,
    ):
        super().__init__()
        widths = [max(1, round(w * width)) for w in _BASE_WIDTHS]
        self.stem = conv_bn_relu(in_channels, widths[0], 3, 1)
        stages: list[nn.Module] = []
        prev = widths[0]
        for i, w in enumerate(widths):
            # The first block of stages 2 and 3 halves the map; conv padding keeps 1x1 maps at 1x1,
            # so inputs as small as 8x8 (or smaller) still work.
            blocks = [basic_block(prev if j == 0 else w, w, 2 if (i > 0 and j == 0) else 1)
                      for j in range(blocks_per_stage)]
            stages.append(nn.Sequential(*blocks))
            prev = w
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(prev, num_classes)
        _init_weights(self, zero_init_residual)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(self.pool(self.stages(self.stem(x))).flatten(1))


def _init_weights(model: nn.Module, zero_init_residual: bool) -> None:
    # He init for convs (He et al. 2015), as in the paper; BN starts as the identity.
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
    if zero_init_residual:
        # Each block then starts as the identity, which trains faster with large batches
        # (Goyal et al. 2017, "Accurate, Large Minibatch SGD").
        for m in model.modules():
            if isinstance(m, ResidualBlock) and (bn := last_batchnorm(m.branch)) is not None:
                nn.init.zeros_(bn.weight)


def cifar_resnet(
    depth: int, num_classes: int, in_channels: int = 3, width: float = 1.0, zero_init_residual: bool = True
) -> CifarResNet:
    """A 6n+2-layer CIFAR ResNet (He et al. 2016, Sec. 4.2); ``width`` multiplies 16/32/64."""
    if depth < 8 or (depth - 2) % 6:
        raise ConfigError("model.depth", f"CIFAR ResNet depth must be 6n+2 with n >= 1, got {depth}")
    if not width > 0:
        raise ConfigError("model.width", f"must be > 0, got {width}")
    return CifarResNet((depth - 2) // 6, num_classes, in_channels, width, zero_init_residual)


# image_size is accepted for the common constructor signature: global pooling makes these nets
# independent of it.
@register_model("resnet8", description="CIFAR ResNet-8 (He et al. 2016), 0.08M params")
def resnet8(num_classes: int, in_channels: int, image_size: int, width: float = 1.0,
            zero_init_residual: bool = True) -> nn.Module:
    """ResNet-8 for CIFAR, n=1 (He et al. 2016, Sec. 4.2)."""
    return cifar_resnet(8, num_classes, in_channels, width, zero_init_residual)


@register_model("resnet14", description="CIFAR ResNet-14 (He et al. 2016), 0.17M params")
def resnet14(num_classes: int, in_channels: int, image_size: int, width: float = 1.0,
             zero_init_residual: bool = True) -> nn.Module:
    """ResNet-14 for CIFAR, n=2 (He et al. 2016, Sec. 4.2)."""
    return cifar_resnet(14, num_classes, in_channels, width, zero_init_residual)


@register_model("resnet20", description="CIFAR ResNet-20 (He et al. 2016), 0.27M params")
def resnet20(num_classes: int, in_channels: int, image_size: int, width: float = 1.0,
             zero_init_residual: bool = True) -> nn.Module:
    """ResNet-20 for CIFAR, n=3 (He et al. 2016, Table 6)."""
    return cifar_resnet(20, num_classes, in_channels, width, zero_init_residual)


@register_model("resnet32", description="CIFAR ResNet-32 (He et al. 2016), 0.46M params")
def resnet32(num_classes: int, in_channels: int, image_size: int, width: float = 1.0,
             zero_init_residual: bool = True) -> nn.Module:
    """ResNet-32 for CIFAR, n=5 (He et al. 2016, Table 6)."""
    return cifar_resnet(32, num_classes, in_channels, width, zero_init_residual)


@register_model("resnet56", description="CIFAR ResNet-56 (He et al. 2016), 0.85M params")
def resnet56(num_classes: int, in_channels: int, image_size: int, width: float = 1.0,
             zero_init_residual: bool = True) -> nn.Module:
    """ResNet-56 for CIFAR, n=9 (He et al. 2016, Table 6)."""
    return cifar_resnet(56, num_classes, in_channels, width, zero_init_residual)


@register_model("resnet110", description="CIFAR ResNet-110 (He et al. 2016), 1.7M params")
def resnet110(num_classes: int, in_channels: int, image_size: int, width: float = 1.0,
              zero_init_residual: bool = True) -> nn.Module:
    """ResNet-110 for CIFAR, n=18 (He et al. 2016, Table 6)."""
    return cifar_resnet(110, num_classes, in_channels, width, zero_init_residual)
