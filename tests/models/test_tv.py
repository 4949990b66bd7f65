from __future__ import annotations

import torch
from torch import nn

from recipesearch.models import create_model


def test_resnet_gets_the_cifar_stem_on_small_images() -> None:
    model = create_model("tv/resnet18", 10, in_channels=1, image_size=32)
    assert model.conv1.in_channels == 1
    assert model.conv1.kernel_size == (3, 3) and model.conv1.stride == (1, 1)
    assert isinstance(model.maxpool, nn.Identity)
    assert model.fc.out_features == 10


def test_resnet_keeps_imagenet_stem_on_large_images_unless_forced() -> None:
    model = create_model("tv/resnet18", 10, in_channels=1, image_size=96)
    assert model.conv1.kernel_size == (7, 7) and model.conv1.stride == (2, 2)
    assert model.conv1.in_channels == 1
    assert isinstance(model.maxpool, nn.MaxPool2d)
    assert isinstance(create_model("tv/resnet18", 10, image_size=96, cifar_stem=True).maxpool, nn.Identity)
    assert isinstance(create_model("tv/resnet18", 10, image_size=32, cifar_stem=False).maxpool, nn.MaxPool2d)


def test_first_conv_adapted_with_same_hyper_parameters() -> None:
    ref = create_model("tv/mobilenet_v3_small", 5, in_channels=3, image_size=32)
    model = create_model("tv/mobilenet_v3_small", 5, in_channels=1, image_size=32)
    old, new = ref.features[0][0], model.features[0][0]
    assert new.in_channels == 1 and old.in_channels == 3
    for attr in ("out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "padding_mode"):
        assert getattr(new, attr) == getattr(old, attr), attr
    assert (new.bias is None) == (old.bias is None)
    # Drawn with the original init's scale, so activations start at the same magnitude.
    assert abs(float(new.weight.detach().std()) / float(old.weight.detach().std()) - 1) < 0.3


def test_googlenet_returns_plain_logits_in_training() -> None:
    out = create_model("tv/googlenet", 4, image_size=32)(torch.randn(2, 3, 32, 32))
    assert isinstance(out, torch.Tensor) and out.shape == (2, 4)
