"""airbench94's network (Jordan 2024, arXiv 2404.00498): shapes, parameter count and its breakdown, the record's
BatchNorm, identity init and logit scale."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from recipesearch.errors import ConfigError
from recipesearch.models import create_model

# The parameter tensors of the default net on CIFAR-10 (3 x 32 x 32, 10 classes), counted by hand:
STEM = 24 * 3 * 2 * 2 + 24  # 2x2 whitening conv: 288 filter weights + 24 bias
GROUPS = [
    # conv1 3x3 (no bias)   conv2 3x3 (no bias)   2 BatchNorms x (scale + shift)
    (24 * 64 * 9, 64 * 64 * 9, 2 * 2 * 64),  # 13,824 + 36,864 + 256
    (64 * 256 * 9, 256 * 256 * 9, 2 * 2 * 256),  # 147,456 + 589,824 + 1,024
    (256 * 256 * 9, 256 * 256 * 9, 2 * 2 * 256),  # 589,824 + 589,824 + 1,024
]
FC = 256 * 10  # no bias
TOTAL = STEM + sum(map(sum, GROUPS)) + FC
BN_SCALES = 2 * (64 + 256 + 256)  # fixed at 1, not trained (the record's BatchNorm)
STEM_FILTERS = 288  # frozen by patch_whitening


def _count(model: nn.Module, trainable: bool | None = None) -> int:
    return sum(p.numel() for p in model.parameters() if trainable is None or p.requires_grad == trainable)


def test_parameter_count_matches_the_record_and_its_breakdown() -> None:
    model = create_model("airbench94", 10)
    # 1,972,792 tensors' entries: the paper's "~2M" network. The record (airbench 0.1.8's make_net94) has the
    # same tensors: 1,972,792 in all, 1,971,352 trained (its BN scales and whitening filters are frozen).
    assert TOTAL == 1_972_792
    assert _count(model) == TOTAL
    assert _count(model) == pytest.approx(1.97e6, rel=0.005)
    assert _count(model, trainable=False) == BN_SCALES == 1_152
    assert _count(model, trainable=True) == TOTAL - BN_SCALES == 1_971_640
    # with patch_whitening's frozen stem, what the record trains:
    assert TOTAL - BN_SCALES - STEM_FILTERS == 1_971_352
    assert _count(model.stem) == STEM
    for group, (conv1, conv2, norms) in zip(model.blocks, GROUPS):
        assert (group.conv1.weight.numel(), group.conv2.weight.numel()) == (conv1, conv2)
        assert _count(group) == conv1 + conv2 + norms
    assert model.fc.weight.numel() == FC and model.fc.bias is None


def test_layers_follow_the_paper() -> None:
    model = create_model("airbench94", 10)
    stem_conv, stem_act = model.stem
    assert (stem_conv.kernel_size, stem_conv.padding, stem_conv.out_channels) == ((2, 2), (0, 0), 24)
    assert stem_conv.bias is not None and isinstance(stem_act, nn.GELU)
    assert [g.conv1.out_channels for g in model.blocks] == [64, 256, 256]
    for group in model.blocks:
        names = [name for name, _ in group.named_children()]
        assert names == ["conv1", "pool", "norm1", "act1", "conv2", "norm2", "act2"]
        assert isinstance(group.pool, nn.MaxPool2d) and isinstance(group.act1, nn.GELU)
        for conv in (group.conv1, group.conv2):
            assert conv.kernel_size == (3, 3) and conv.bias is None
        for bn in (group.norm1, group.norm2):
            # the paper's momentum 0.6 is the running average's own weight: PyTorch's momentum 0.4
            assert (bn.momentum, bn.eps) == (0.4, 1e-12)
            assert not bn.weight.requires_grad and bool((bn.weight == 1).all()) and bn.bias.requires_grad
    assert isinstance(model.pool, nn.AdaptiveMaxPool2d)
    assert model.scale == pytest.approx(1 / 9)


def test_feature_maps_shrink_as_in_the_record() -> None:
    # 32 px: 31 after the 2x2 stem, then 15, 7 and 3 after each group's pool; the global max pool ends at 1x1.
    model = create_model("airbench94", 10)
    sizes = []
    for group in model.blocks:
        group.register_forward_hook(lambda m, i, out: sizes.append(tuple(out.shape[1:])))
    out = model(torch.randn(2, 3, 32, 32))
    assert out.shape == (2, 10)
    assert sizes == [(64, 15, 15), (256, 7, 7), (256, 3, 3)]


def test_logits_are_the_linear_head_of_the_max_pooled_features_over_nine() -> None:
    torch.manual_seed(0)
    model = create_model("airbench94", 10).eval()
    x = torch.randn(3, 3, 32, 32)
    features = model.blocks(model.stem(x)).amax(dim=(2, 3))
    torch.testing.assert_close(model(x), features @ model.fc.weight.T / 9)


def test_identity_init_of_the_3x3_convs() -> None:
    torch.manual_seed(0)
    model = create_model("airbench94", 10)
    for group in model.blocks:
        for conv in (group.conv1, group.conv2):
            x = torch.randn(2, conv.in_channels, 5, 5)
            # the first in_channels output channels pass their input through unchanged
            torch.testing.assert_close(conv(x)[:, : conv.in_channels], x)
            if conv.out_channels > conv.in_channels:  # the others keep a random init
                assert conv.weight[conv.in_channels :].abs().sum() > 0
    plain = create_model("airbench94", 10, identity_init=False)
    conv = plain.blocks[0].conv1
    assert not torch.allclose(conv(torch.ones(1, 24, 3, 3))[:, :24], torch.ones(1, 24, 3, 3))


def test_options() -> None:
    model = create_model("airbench94", 7, in_channels=1, widths=[8, 16, 32], scale=0.5, bn_scale=True,
                         bn_momentum=0.1)
    assert model.stem[0].out_channels == 2 * 1 * 4  # paired whitening filters of a 1-channel 2x2 patch
    assert [g.conv2.out_channels for g in model.blocks] == [8, 16, 32] and model.fc.out_features == 7
    assert all(p.requires_grad for p in model.parameters()) and model.blocks[0].norm1.momentum == 0.1
    assert create_model("airbench94", 10, stem_width=32).stem[0].out_channels == 32


@pytest.mark.parametrize(("option", "value"), [("widths", [64, 256]), ("widths", [64, 0, 8]), ("scale", 0),
                                               ("stem_width", 0), ("bn_momentum", 1.5), ("bn_eps", 0.0)])
def test_bad_options_are_config_errors(option: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        create_model("airbench94", 10, **{option: value})
    assert info.value.field == f"model.{option}"
