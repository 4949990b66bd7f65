from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from recipesearch.algorithms.blurpool import BlurConv2d, BlurMaxPool2d, apply_blurpool, blur_filter
from recipesearch.errors import ConfigError
from recipesearch.train.loop import fit


def _net() -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1),   # stem: too few input channels, kept
        nn.Conv2d(16, 16, 3, padding=1),            # stride 1, kept
        nn.Conv2d(16, 32, 3, stride=2, padding=1),  # replaced
        nn.MaxPool2d(2),                            # replaced
        nn.Sequential(nn.Conv2d(32, 32, 1, stride=2)),  # nested, replaced
    )


def test_replaces_strided_convs_and_maxpools_keeping_shapes():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 32, 32)
    for blur_first in (True, False):
        net = _net()
        expected = net(x).shape
        net, count = apply_blurpool(net, blur_first=blur_first, min_channels=16)
        assert count == 3
        assert sum(isinstance(m, BlurConv2d) for m in net.modules()) == 2
        assert sum(isinstance(m, BlurMaxPool2d) for m in net.modules()) == 1
        assert type(net[0]) is nn.Conv2d and type(net[1]) is nn.Conv2d
        assert net(x).shape == expected


@pytest.mark.parametrize("size", [7, 8, 9, 16])
def test_blur_maxpool_keeps_maxpool_shape(size: int):
    x = torch.randn(1, 4, size, size)
    for pool in (nn.MaxPool2d(2), nn.MaxPool2d(3, 2, padding=1)):
        assert BlurMaxPool2d(pool)(x).shape == pool(x).shape
        assert BlurMaxPool2d(pool, blur_first=True)(x).shape == pool(x).shape


def test_blur_first_maxpool_is_the_strided_max_of_the_blurred_input():
    torch.manual_seed(0)
    x = torch.randn(2, 4, 28, 28)
    pool = nn.MaxPool2d(2)
    cheap = BlurMaxPool2d(pool, blur_first=True)
    blurred = F.conv2d(x, blur_filter(4), padding=1, groups=4)
    assert torch.allclose(cheap(x), pool(blurred))
    assert not torch.allclose(cheap(x), BlurMaxPool2d(pool)(x))  # not Zhang's dense max then strided blur
    net, count = apply_blurpool(nn.Sequential(nn.MaxPool2d(2)), maxpool_blur_first=True)
    assert count == 1 and net[0].blur_first


def test_blur_filter_is_normalised_binomial():
    filt = blur_filter(5)
    assert filt.shape == (5, 1, 3, 3)
    assert torch.allclose(filt.sum((1, 2, 3)), torch.ones(5))
    assert filt[0, 0, 1, 1] == 4 / 16 and filt[0, 0, 0, 0] == 1 / 16


def test_blur_maxpool_is_more_shift_invariant():
    # Stripes of period 4: a one-pixel shift changes what a stride-2 max-pool sees (Zhang 2019, Fig. 1).
    row = torch.tensor([1.0, 1.0, 0.0, 0.0]).repeat(8)  # width 32
    x = row.expand(1, 1, 32, 32).contiguous()
    shifted = torch.roll(x, 1, dims=3)

    def mean_change(pool: nn.Module) -> float:
        # Interior only: the zero padding at the border is not what is measured.
        a, b = pool(x)[..., 2:-2, 2:-2], pool(shifted)[..., 2:-2, 2:-2]
        return (a.mean() - b.mean()).abs().item()

    plain = mean_change(nn.MaxPool2d(2))
    blurred = mean_change(BlurMaxPool2d(nn.MaxPool2d(2)))
    assert plain == pytest.approx(0.5)
    assert blurred < 0.05 * plain


def test_blur_conv_blur_first_equals_conv_of_blurred_input():
    torch.manual_seed(0)
    conv = nn.Conv2d(16, 8, 3, stride=2, padding=1)
    blur = BlurConv2d(conv, blur_first=True)
    x = torch.randn(2, 16, 8, 8)
    blurred = nn.functional.conv2d(x, blur_filter(16), padding=1, groups=16)
    torch.testing.assert_close(blur(x), conv(blurred))
    # A constant image is unchanged by the blur away from the border.
    ones = torch.ones(1, 16, 6, 6)
    inner = nn.functional.conv2d(ones, blur_filter(16), padding=1, groups=16)[..., 1:-1, 1:-1]
    assert torch.allclose(inner, torch.ones_like(inner))


def test_nothing_to_replace_is_a_config_error(tiny_recipe):
    recipe = tiny_recipe({"blurpool": {"replace_maxpools": False}})  # the cnn has no strided conv
    with pytest.raises(ConfigError, match="blurpool"):
        fit(recipe)


def test_trains(tiny_recipe):
    result = fit(tiny_recipe({"blurpool": {}}))
    assert math.isfinite(result.loss)
    assert result.accuracy > 0.2


def test_resnet8_strided_convs_are_replaced():
    from recipesearch.models import create_model

    model = create_model("resnet8", num_classes=10, in_channels=3, image_size=16)
    x = torch.randn(2, 3, 16, 16)
    shape = model(x).shape
    model, count = apply_blurpool(model)
    # Stages 2 and 3 open with a strided 3x3 conv in the branch and a strided 1x1 projection shortcut.
    assert count == 4
    assert model(x).shape == shape


def test_ceil_mode_maxpool_is_left_alone():
    net, count = apply_blurpool(nn.Sequential(nn.MaxPool2d(2, ceil_mode=True)))
    assert count == 0 and isinstance(net[0], nn.MaxPool2d)


def test_new_buffers_follow_the_model_device():
    # The meta device stands in for a GPU: surgery after .to(device) must not leave filters on the CPU.
    with torch.device("meta"):
        net = _net()
    net, _ = apply_blurpool(net)
    assert {t.device.type for t in (*net.parameters(), *net.buffers())} == {"meta"}


def test_the_blur_runs_in_fp32_under_cpu_autocast():
    # oneDNN's bf16 depthwise backward is CPU's slow path (blur_2d): the blur leaves autocast, the rest is bf16
    torch.manual_seed(0)
    pool = BlurMaxPool2d(nn.MaxPool2d(2))
    x = torch.randn(2, 8, 12, 12, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = pool(x.to(torch.bfloat16))
    assert y.dtype == torch.float32
    assert torch.allclose(y, pool(x.to(torch.bfloat16).float()), atol=1e-6)
    y.sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
