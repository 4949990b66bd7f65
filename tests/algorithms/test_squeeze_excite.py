from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from recipesearch.algorithms.squeeze_excite import SqueezeExcite2d, apply_squeeze_excite, latent_width
from recipesearch.errors import ConfigError
from recipesearch.train.loop import fit


def _net() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 32, 3, padding=1),
                         nn.ReLU(), nn.Conv2d(32, 16, 3, stride=2, padding=1), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(16, 10))


def test_se_inserted_after_wide_convs_only_and_shapes_unchanged():
    net = _net()
    x = torch.randn(2, 3, 8, 8)
    shape = net(x).shape
    net, count = apply_squeeze_excite(net, latent_channels=0.25, min_channels=16)
    assert count == 2
    assert isinstance(net[0], nn.Conv2d)  # 8 channels < 16: untouched
    for i, channels in ((2, 32), (4, 16)):
        conv, se = net[i]
        assert isinstance(conv, nn.Conv2d) and isinstance(se, SqueezeExcite2d)
        assert se.gate[1].out_channels == channels // 4  # the bottleneck
    assert net(x).shape == shape
    # The classifier is still the model's last nn.Linear (the SE's FCs are 1x1 convs).
    assert [m for m in net.modules() if isinstance(m, nn.Linear)] == [net[-1]]


def test_se_rescales_each_channel_by_a_gate_in_0_1():
    se = SqueezeExcite2d(6, 3)
    x = torch.rand(2, 6, 4, 4) + 0.1
    ratio = se(x) / x
    # One gate per (sample, channel), constant over space, strictly between 0 and 1.
    assert torch.allclose(ratio, ratio[..., :1, :1].expand_as(ratio), atol=1e-6)
    assert bool(((ratio > 0) & (ratio < 1)).all())


def test_latent_width_absolute_or_fraction():
    assert latent_width(256, 64) == 64
    assert latent_width(256, 0.0625) == 16
    assert latent_width(4, 0.1) == 1


def test_no_wide_conv_is_a_config_error(tiny_recipe):
    with pytest.raises(ConfigError, match="min_channels"):
        fit(tiny_recipe({"squeeze_excite": {}}))  # default 128 > the tiny cnn's widths


def test_trains(tiny_recipe):
    result = fit(tiny_recipe({"squeeze_excite": {"min_channels": 16, "latent_channels": 8}}))
    assert math.isfinite(result.loss)
    assert result.accuracy > 0.2


def test_new_modules_follow_the_model_device():
    with torch.device("meta"):
        net = _net()
    net, _ = apply_squeeze_excite(net, min_channels=16)
    assert {p.device.type for p in net.parameters()} == {"meta"}
