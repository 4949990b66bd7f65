"""Torchvision classification models as ``tv/<name>``, built untrained (``weights=None``, no downloads).

Adaptations to our data:
1. ``in_channels``: the first ``nn.Conv2d`` is replaced by one with the same hyper-parameters and the new
   number of input channels, its weights drawn with the original init's standard deviation.
2. ResNet family (resnet*, resnext*, wide_resnet*) on images <= 64 px (or ``cifar_stem=True``): the 7x7
   stride-2 stem conv becomes 3x3 stride 1 and the max-pool is dropped, the usual CIFAR adaptation
   (e.g. Zagoruyko & Komodakis 2016); otherwise a 32 px image is 8x8 after the stem and 1x1 by stage 4.
3. googlenet / inception_v3 default to ``aux_logits=False`` (one logits tensor out) and ``init_weights=True``;
   vit_* default to ``image_size`` = the data's (it must be a multiple of the patch size).
Other models run as torchvision defines them; some need large inputs (alexnet >= 63 px, inception_v3 >= 75 px,
maxvit_t 224 px).
Squeezenet classifies with a conv, not an ``nn.Linear``, so it breaks the model contract and is refused.
"""
from __future__ import annotations

import functools
import re
from typing import Any

import torch
import torchvision
from torch import nn

from recipesearch.errors import ConfigError
from recipesearch.models.registry import TV_PREFIX

# Models whose classifier is not an nn.Linear (the contract the losses rely on).
_NO_LINEAR_HEAD = ("squeezenet",)
_CIFAR_STEM_MAX_SIZE = 64


@functools.cache
def torchvision_model_names() -> tuple[str, ...]:
    """Classification model names torchvision knows, minus those without an ``nn.Linear`` head."""
    names = torchvision.models.list_models(module=torchvision.models)
    return tuple(sorted(n for n in names if not n.startswith(_NO_LINEAR_HEAD)))


def create_torchvision_model(
    name: str, num_classes: int, in_channels: int = 3, image_size: int = 32, cifar_stem: bool | None = None,
    **kwargs: Any,
) -> nn.Module:
    """``torchvision.models.get_model(name, weights=None, num_classes=...)`` adapted as the module doc says.

    ``cifar_stem``: None decides by family and image size; True/False forces it (ResNet family only).
    Other ``kwargs`` go to the torchvision constructor.
    """
    if name not in torchvision_model_names():
        raise ConfigError(
            "model.name", f"unknown model '{TV_PREFIX}{name}'; allowed: tv/<name> for a name in list_models('tv/*')"
        )
    if "weights" in kwargs:
        raise ConfigError("model.weights",
                          "pretrained weights are not supported (no downloads); models start untrained")
    if name in ("googlenet", "inception_v3"):
        kwargs.setdefault("aux_logits", False)
        kwargs.setdefault("init_weights", True)  # silences torchvision's warning about the default changing
    if name.startswith("vit_"):
        kwargs.setdefault("image_size", image_size)
    try:
        model = torchvision.models.get_model(name, weights=None, num_classes=num_classes, **kwargs)
    except TypeError as e:
        # torchvision forwards options to the class constructor: report a misspelt one as a recipe field.
        m = re.search(r"unexpected keyword argument '(\w+)'", str(e))
        if m is None:
            raise
        raise ConfigError(f"model.{m.group(1)}", f"unknown option for model '{TV_PREFIX}{name}'") from None

    is_resnet = isinstance(model, torchvision.models.ResNet)
    if cifar_stem is None:
        cifar_stem = is_resnet and image_size <= _CIFAR_STEM_MAX_SIZE
    if cifar_stem:
        if not is_resnet:
            raise ConfigError("model.cifar_stem", f"only applies to ResNet-family models, not '{TV_PREFIX}{name}'")
        _cifar_stem(model, in_channels)
    else:
        _adapt_first_conv(model, in_channels)
    return model


def _cifar_stem(model: torchvision.models.ResNet, in_channels: int) -> None:
    old = model.conv1
    model.conv1 = nn.Conv2d(in_channels, old.out_channels, 3, 1, 1, bias=False)
    nn.init.kaiming_normal_(model.conv1.weight, mode="fan_out", nonlinearity="relu")  # as torchvision's ResNet
    model.maxpool = nn.Identity()


def _adapt_first_conv(model: nn.Module, in_channels: int) -> None:
    name, old = next((n, m) for n, m in model.named_modules() if isinstance(m, nn.Conv2d))
    if old.in_channels == in_channels:
        return
    if old.groups != 1:
        raise ConfigError("model.name", f"cannot adapt grouped first conv '{name}' to {in_channels} channels")
    new = nn.Conv2d(
        in_channels, old.out_channels, old.kernel_size, old.stride, old.padding, old.dilation,
        bias=old.bias is not None, padding_mode=old.padding_mode,
    )
    with torch.no_grad():
        # Each model family has its own init scheme; matching the std of the weights it just drew keeps
        # the scheme without knowing it (fan-out based inits do not depend on in_channels anyway).
        new.weight.normal_(0.0, float(old.weight.std()))
        if old.bias is not None:
            new.bias.copy_(old.bias)
    parent_name, _, attr = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, attr, new)
