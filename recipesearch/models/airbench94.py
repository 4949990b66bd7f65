"""airbench94's network: K. Jordan 2024, "94% on CIFAR-10 in 3.29 Seconds on a Single GPU" (arXiv 2404.00498).

A VGG-like net, as the paper describes it (Sec. 3: the network, its BatchNorm, identity initialisation)::

    stem    2x2 conv, no padding, 2 x C x 2 x 2 filters (24 for RGB), bias -> GELU
    block   conv3x3 -> maxpool 2 -> BN -> GELU -> conv3x3 -> BN -> GELU      widths 64, 256, 256
    head    global max pool -> fc (no bias) -> logits x 1/9

The stem is where the record's patch whitening goes: its filters are the eigenvectors of the 2x2 patch
covariance of the training images, positive and negative, fixed. Here that is the ``patch_whitening`` method
(it sets and freezes the first conv), so the net alone has a plain trainable stem and a search can switch
the whitening on and off. 3x3 convs have no bias (BN's shift replaces it). BatchNorm: eps 1e-12 and
running statistics that keep 0.6 of their old value per step (the paper's "momentum 0.6"; PyTorch's
``momentum`` is the new batch's weight: 0.4 here); its scale is fixed at 1 (a frozen parameter, as in the
record) and only its shift trains. Each 3x3 conv starts with its first ``in_channels`` filters as the
identity (``nn.init.dirac_``, the paper's partial identity init), the rest as PyTorch initialises them.

Parameters with the default widths on 3-channel images: 1,972,792 (the record's network has the same
tensors), 1,971,640 of them trainable (the 1,152 BN scales are not) and 1,971,352 once ``patch_whitening``
freezes the stem's 288 filter weights: tests/models/test_airbench94.py has the breakdown.

For images other than 32 px: the record's last pool is a 3x3 max-pool over the 3x3 map left of 32 px; a
global max pool is the same there and takes any size; a block whose map is already 1 px skips its pool.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from torch import Tensor, nn

from recipesearch.errors import ConfigError
from recipesearch.models.blocks import max_pool_if_fits
from recipesearch.models.registry import register_model

WIDTHS = (64, 256, 256)
SCALE = 1 / 9  # the record's fixed softmax temperature
BN_MOMENTUM = 0.4  # PyTorch's convention: running = 0.6 * running + 0.4 * batch
BN_EPS = 1e-12


def batchnorm(channels: int, momentum: float, eps: float, train_scale: bool) -> nn.BatchNorm2d:
    """BatchNorm2d whose scale (gamma, 1 at the start) trains only if ``train_scale``; its shift always does.

    A frozen parameter rather than none at all: methods that rebuild BatchNorm (ghost_batchnorm) and
    state dicts keep the standard layout."""
    bn = nn.BatchNorm2d(channels, eps=eps, momentum=momentum)
    bn.weight.requires_grad_(train_scale)
    return bn


class ConvGroup(nn.Sequential):
    """conv3x3 -> pool -> BN -> GELU -> conv3x3 -> BN -> GELU (the record's building block)."""

    def __init__(self, in_channels: int, out_channels: int, pool: nn.Module, bn_momentum: float, bn_eps: float,
                 bn_scale: bool):
        super().__init__(OrderedDict([
            ("conv1", nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)),
            ("pool", pool),
            ("norm1", batchnorm(out_channels, bn_momentum, bn_eps, bn_scale)),
            ("act1", nn.GELU()),
            ("conv2", nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)),
            ("norm2", batchnorm(out_channels, bn_momentum, bn_eps, bn_scale)),
            ("act2", nn.GELU()),
        ]))


class Airbench94(nn.Module):
    """stem (2x2 conv, GELU) -> three ``ConvGroup``s -> global max pool -> x ``scale`` -> ``fc``."""

    def __init__(self, num_classes: int, in_channels: int = 3, image_size: int = 32,
                 widths: Sequence[int] = WIDTHS, scale: float = SCALE, stem_width: int | None = None,
                 bn_momentum: float = BN_MOMENTUM, bn_eps: float = BN_EPS, bn_scale: bool = False,
                 identity_init: bool = True):
        super().__init__()
        # Paired whitening filters: +/- each of the C*2*2 eigen-directions of a 2x2 patch.
        stem_width = stem_width or 2 * in_channels * 2 * 2
        self.stem = nn.Sequential(nn.Conv2d(in_channels, stem_width, 2, padding=0, bias=True), nn.GELU())
        size = image_size - 1  # a 2x2 conv without padding
        groups, prev = [], stem_width
        for width in widths:
            pool, size = max_pool_if_fits(size)
            groups.append(ConvGroup(prev, width, pool, bn_momentum, bn_eps, bn_scale))
            prev = width
        self.blocks = nn.Sequential(*groups)
        self.pool = nn.AdaptiveMaxPool2d(1)
        # The record multiplies the logits by 1/9. With no bias in fc, scaling its input is the same and keeps
        # fc the model's last module (the classifier the losses and bce_loss look for).
        self.scale = scale
        self.fc = nn.Linear(prev, num_classes, bias=False)
        if identity_init:
            for group in groups:
                for conv in (group.conv1, group.conv2):
                    # out >= in in every default block; with fewer outputs dirac_ sets the ones there are
                    nn.init.dirac_(conv.weight[: conv.in_channels])

    def forward(self, x: Tensor) -> Tensor:
        x = self.blocks(self.stem(x))
        return self.fc(self.pool(x).flatten(1) * self.scale)


@register_model("airbench94", description="airbench94's VGG-like net (Jordan 2024): 2x2 stem, 64/256/256, 1.97M params")
def airbench94(num_classes: int, in_channels: int, image_size: int, widths: Sequence[int] = WIDTHS,
               scale: float = SCALE, stem_width: int | None = None, bn_momentum: float = BN_MOMENTUM,
               bn_eps: float = BN_EPS, bn_scale: bool = False, identity_init: bool = True) -> nn.Module:
    """airbench94's network (Jordan 2024, arXiv 2404.00498); ``widths`` of its three conv groups.

    ``scale``: logit multiplier (1/9); ``stem_width``: the 2x2 stem's filters (None: 2 x in_channels x 4, what
    paired patch whitening fills); ``bn_momentum`` in PyTorch's convention (0.4 = the paper's 0.6);
    ``bn_scale``: train BatchNorm's scale too (the record does not); ``identity_init``: dirac-initialise the
    first in_channels filters of each 3x3 conv.
    """
    if not (isinstance(widths, Sequence) and len(widths) == 3
            and all(isinstance(w, int) and not isinstance(w, bool) and w >= 1 for w in widths)):
        raise ConfigError("model.widths", f"must be three integers >= 1 (the conv groups' widths), got {widths!r}")
    if not scale > 0:
        raise ConfigError("model.scale", f"must be > 0, got {scale!r}")
    if stem_width is not None and not (isinstance(stem_width, int) and stem_width >= 1):
        raise ConfigError("model.stem_width", f"must be an integer >= 1 or null, got {stem_width!r}")
    if not 0 <= bn_momentum <= 1:
        raise ConfigError("model.bn_momentum", f"must be in [0, 1] (PyTorch's convention), got {bn_momentum!r}")
    if not bn_eps > 0:
        raise ConfigError("model.bn_eps", f"must be > 0, got {bn_eps!r}")
    if image_size < 2:
        raise ConfigError("model.name", f"airbench94's 2x2 stem needs images of at least 2 px, got {image_size}")
    return Airbench94(num_classes, in_channels, image_size, tuple(widths), scale, stem_width, bn_momentum, bn_eps,
                      bn_scale, identity_init)
