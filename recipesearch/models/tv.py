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
maxvit_t 224 px). ``check_forward`` runs a model once on a 2-image batch of the data's shape before training
(``train/loop.py``), so a model that cannot take the images is a one-line ConfigError naming the size it needs.
Squeezenet classifies with a conv, not an ``nn.Linear``, so it breaks the model contract and is refused.
"""
from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from recipesearch.errors import ConfigError

if TYPE_CHECKING:
    import torchvision

# How a recipe names a torchvision model: ``tv/resnet18``. Defined here, with the models it names; the model
# registry (registry.py) imports this module to reach them, so torchvision itself loads only inside the
# functions below: importing it takes seconds, and most recipes never name a tv/ model.
TV_PREFIX = "tv/"

# Models whose classifier is not an nn.Linear (the contract the losses rely on).
_NO_LINEAR_HEAD = ("squeezenet",)
_CIFAR_STEM_MAX_SIZE = 64


@functools.cache
def torchvision_model_names() -> tuple[str, ...]:
    """Classification model names torchvision knows, minus those without an ``nn.Linear`` head."""
    import torchvision

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
    import torchvision

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
            raise _build_error(name, in_channels, kwargs.get("image_size", image_size), e) from None
        raise ConfigError(f"model.{m.group(1)}", f"unknown option for model '{TV_PREFIX}{name}'") from None
    except Exception as e:  # noqa: BLE001 - torchvision asserts on shapes it cannot take (vit_b_32 on 16 px)
        raise _build_error(name, in_channels, kwargs.get("image_size", image_size), e) from None

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


# (name, classes, channels, data size, batch height, width, options) -> None (it runs) or what is wrong: each
# model and shape is checked once per process.
_CHECKED: dict[tuple[Any, ...], str | None] = {}
# Square sizes tried upwards when a model cannot take the data's size, then bisected to the smallest that runs.
_PROBE_SIZES = (32, 64, 128, 224, 256, 299, 384, 512)


def check_forward(
    model: nn.Module, name: str, num_classes: int, in_channels: int, image_size: int,
    options: dict[str, Any] | None = None, *, shape: tuple[int, int] | None = None, field: str = "model.name",
    cause: str = "",
) -> None:
    """Run torchvision model ``name`` (built as ``model``, on the CPU) once on a batch of 2 zero images of
    ``in_channels`` x ``image_size``² (or ``shape``: the smaller batches a method such as progressive resizing
    trains on; ``cause`` names it and ``field`` is the field to blame), without gradients and in eval mode, so
    neither its weights, buffers nor any random generator change. A model that fails, or whose output is not
    ``[2, num_classes]`` logits, is a ConfigError on ``field`` saying what it needs. Once per process for
    each model, options and shape."""
    height, width = shape or (image_size, image_size)
    key = (name, num_classes, in_channels, image_size, height, width, repr(sorted((options or {}).items())))
    if key not in _CHECKED:
        problem = forward_problem(model, num_classes, in_channels, height, width)
        if problem is not None:
            problem = _forward_message(model, name, num_classes, in_channels, image_size, problem, shape, cause)
        _CHECKED[key] = problem
    if _CHECKED[key] is not None:
        raise ConfigError(field, _CHECKED[key])


def forward_problem(model: nn.Module, num_classes: int, in_channels: int, height: int, width: int,
                    batch: int = 2) -> str | None:
    """What goes wrong when ``model`` (eval mode, no gradients) classifies ``batch`` zero images of that shape
    (``Type: message`` on one line), or None when it returns ``[batch, num_classes]`` logits."""
    modes = [(m, m.training) for m in model.modules()]
    param = next(model.parameters(), None)
    x = torch.zeros(batch, in_channels, height, width, device=param.device if param is not None else None)
    model.eval()
    try:
        with torch.no_grad():
            out = model(x)
    except Exception as e:  # noqa: BLE001 - any failure is the answer
        return _one_line(e)
    finally:
        for module, training in modes:
            module.training = training
    if not isinstance(out, torch.Tensor):
        return f"it returns a {type(out).__name__}, not a tensor of logits [{batch}, {num_classes}]"
    if tuple(out.shape) != (batch, num_classes):
        return f"it returns a tensor of shape {list(out.shape)}, not logits [{batch}, {num_classes}]"
    return None


def _forward_message(model: nn.Module, name: str, num_classes: int, in_channels: int, image_size: int,
                     problem: str, shape: tuple[int, int] | None, cause: str) -> str:
    tv = f"{TV_PREFIX}{name}"
    if shape is not None:  # a method's smaller batches
        return (f"{tv} cannot take the {_px(*shape)} images that {cause} makes of the {image_size} px data "
                f"({problem}); drop {cause} or use another model")
    fix = _size_fix(model, num_classes, in_channels, image_size)
    if fix is None:
        return (f"{tv} cannot take {in_channels}-channel {image_size} px images ({problem}); use another model "
                "or other model options")
    return f"{tv} cannot take {image_size} px images ({problem}); use {fix} or another model"


def _size_fix(model: nn.Module, num_classes: int, in_channels: int, image_size: int) -> str | None:
    """``data.image_size >= N``: the smallest square size above ``image_size`` that ``model`` runs on (the first
    of ``_PROBE_SIZES`` that runs, then bisection down to the failing size below it; one image a try), when it
    also runs on N + 1 and on the probe sizes up to 2N; else one size it runs on (maxvit_t: 224 px, not 225);
    None when none up to 512 px does."""
    def runs(size: int) -> bool:
        return forward_problem(model, num_classes, in_channels, size, size, batch=1) is None

    low, found = image_size, None
    for size in (s for s in _PROBE_SIZES if s > image_size):
        if runs(size):
            found = size
            break
        low = size
    if found is None:
        return None
    high = found
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if runs(mid) else (mid, high)
    larger = [high + 1, *(s for s in _PROBE_SIZES if high + 1 < s <= 2 * high)]
    if all(runs(size) for size in larger):
        return f"data.image_size >= {high}"
    return f"data.image_size: {found} (a size it runs on; not every larger one does)"


def _build_error(name: str, in_channels: int, image_size: int, exc: Exception) -> ConfigError:
    """A torchvision constructor that raised: vit_* asserts that the image size is a multiple of its patch."""
    tv, problem = f"{TV_PREFIX}{name}", _one_line(exc)
    m = re.fullmatch(r"vit_[a-z]_(\d+)", name)
    if m and image_size % int(m.group(1)):
        patch = int(m.group(1))
        size = -(-image_size // patch) * patch
        return ConfigError("model.name", f"{tv} cannot take {image_size} px images ({problem}); use a data.image_size "
                                         f"that is a multiple of {patch} (e.g. {size}) or another model")
    return ConfigError("model.name", f"{tv} cannot be built for {in_channels}-channel {image_size} px images "
                                     f"({problem}); check its options (model.*) or use another model")


def _one_line(exc: BaseException, limit: int = 200) -> str:
    text = " ".join(str(exc).split()) or "no message"
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{type(exc).__name__}: {text}"


def _px(height: int, width: int) -> str:
    return f"{height} px" if height == width else f"{height}x{width} px"
