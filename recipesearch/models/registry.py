"""Model registry in the style of timm: ``@register_model`` + ``create_model`` + ``list_models``.

Own models are registered by decorating a constructor ``fn(num_classes, in_channels, image_size,
**options) -> nn.Module``. Torchvision classification models are reachable as ``tv/<name>`` without
registering them one by one (see ``recipesearch.models.tv``); they are listed only when the pattern
asks for them (``list_models("tv/*")``) so that the default listing stays our short, CPU-friendly set.
"""
from __future__ import annotations

import fnmatch
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from torch import nn

from recipesearch.errors import ConfigError
from recipesearch.models.tv import TV_PREFIX, create_torchvision_model, torchvision_model_names
from recipesearch.plugins import (
    accepted_options,
    check_options,
    describe_call_error,
    is_import_path,
    missing_required,
    resolve,
)

# The three arguments every constructor receives from the data; anything else is a model option.
_DATA_ARGS = ("num_classes", "in_channels", "image_size")


# fn(num_classes, in_channels, image_size, **options) -> nn.Module
ModelFn = Callable[..., nn.Module]
F = TypeVar("F", bound=ModelFn)


@dataclass(frozen=True)
class ModelInfo:
    """One registry entry; ``options`` are the keyword options the constructor accepts."""

    name: str
    fn: ModelFn
    description: str
    options: tuple[str, ...]


_REGISTRY: dict[str, ModelInfo] = {}


def register_model(name: str, description: str = "") -> Callable[[F], F]:
    """Decorator storing ``fn`` under ``name``; the description defaults to the docstring's first line."""

    def decorator(fn: F) -> F:
        if name in _REGISTRY:
            raise ValueError(f"model {name!r} is already registered")
        if name.startswith(TV_PREFIX):
            raise ValueError(f"the {TV_PREFIX!r} prefix is reserved for torchvision models")
        if is_import_path(name):
            raise ValueError(f"model name {name!r}: ':' marks an import path; choose a plain name")
        params = inspect.signature(fn).parameters
        missing = [a for a in _DATA_ARGS if a not in params]
        if missing:
            raise TypeError(f"model constructor {name!r} must accept {', '.join(missing)}")
        # Options are the named keyword parameters; own constructors take no **kwargs so that a typo
        # in a recipe is caught here rather than silently ignored.
        named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        options = tuple(p.name for p in params.values() if p.name not in _DATA_ARGS and p.kind in named)
        doc = (inspect.getdoc(fn) or "").splitlines()
        _REGISTRY[name] = ModelInfo(name, fn, description or (doc[0] if doc else ""), options)
        return fn

    return decorator


def registered_models() -> dict[str, ModelInfo]:
    """Every registered entry by name (a copy)."""
    return dict(_REGISTRY)


def install_model(info: ModelInfo) -> None:
    """Register an entry received from the driver (``engine/shipping.py``); a name already here is kept."""
    _REGISTRY.setdefault(info.name, info)


def list_models(pattern: str | None = None) -> list[str]:
    """Registered names matching the fnmatch ``pattern``, in natural order (resnet8 before resnet20).

    Torchvision names (``tv/resnet18``...) are included only when ``pattern`` starts with ``tv/``:
    there are ~80 of them and most are too big for the small images this tool trains on.
    """
    names = sorted(_REGISTRY, key=_natural_key)
    if pattern is not None and pattern.startswith(TV_PREFIX):
        names = sorted((TV_PREFIX + n for n in torchvision_model_names()), key=_natural_key)
    if pattern is None:
        return names
    return [n for n in names if fnmatch.fnmatchcase(n, pattern)]


def model_info(name: str) -> ModelInfo:
    """The registry entry of an own model; ConfigError on ``model.name`` when unknown."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError("model.name", _unknown_message(name)) from None


def create_model(
    name: str, num_classes: int, in_channels: int = 3, image_size: int = 32, **kwargs: Any
) -> nn.Module:
    """Build model ``name`` for ``num_classes`` classes and ``in_channels`` x ``image_size``² inputs.

    ``kwargs`` are model options (``width``, ``zero_init_residual``...); an option the model does not
    take raises ConfigError on ``model.<option>`` so the recipe field at fault is named.
    """
    for arg, value in (("num_classes", num_classes), ("in_channels", in_channels), ("image_size", image_size)):
        # These come from the data, not the recipe: a bad one is a programming error, not a user error.
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{arg} must be a positive int, got {value!r}")
    if name.startswith(TV_PREFIX):
        return create_torchvision_model(name[len(TV_PREFIX):], num_classes, in_channels, image_size, **kwargs)
    if is_import_path(name):
        return _create_imported(name, num_classes, in_channels, image_size, kwargs)
    info = model_info(name)
    for key in kwargs:
        if key not in info.options:
            allowed = ", ".join(info.options) or "none"
            raise ConfigError(f"model.{key}", f"unknown option for model '{name}'; allowed: {allowed}")
    return info.fn(num_classes=num_classes, in_channels=in_channels, image_size=image_size, **kwargs)


def imported_factory(path: str) -> ModelFn:
    """The factory at import path ``path``, checked to take the data's three arguments."""
    fn = resolve(path, "model.name")
    if isinstance(fn, type) and not issubclass(fn, nn.Module):
        raise ConfigError("model.name", f"{path} is the class {fn.__name__}, not a model factory or an nn.Module "
                                        "subclass")
    if not callable(fn):
        raise ConfigError("model.name", f"{path} is a {type(fn).__name__}, not a model factory "
                                        "(num_classes, in_channels, image_size, **options) -> nn.Module")
    options, var_kw = accepted_options(fn)
    missing = [a for a in _DATA_ARGS if a not in options]
    if missing and not var_kw:
        raise ConfigError("model.name", f"{path} must accept {', '.join(missing)} "
                                        "(a factory (num_classes, in_channels, image_size, **options))")
    return fn


def _create_imported(path: str, num_classes: int, in_channels: int, image_size: int,
                     options: dict[str, Any]) -> nn.Module:
    fn = imported_factory(path)
    check_options(fn, options, "model", f"model '{path}'", reserved=_DATA_ARGS)
    missing = missing_required(fn, options, _DATA_ARGS)
    if missing:
        raise ConfigError(f"model.{missing[0]}", f"required by {path} and not given")
    try:
        model = fn(num_classes=num_classes, in_channels=in_channels, image_size=image_size, **options)
    except Exception as exc:  # noqa: BLE001 - the user's factory: its error, in one line, names it
        raise ConfigError("model.name", f"{path} raised {describe_call_error(exc)}") from None
    if not isinstance(model, nn.Module):
        raise ConfigError("model.name", f"{path} returned a {type(model).__name__}, not a torch.nn.Module")
    param = next(model.parameters(), None)
    if param is not None and param.device.type != "meta":
        # A model whose logits do not match the data's classes would end in a traceback from the loss at step 1
        # (a target out of bounds); two zero images through it now make that one line, before anything trains.
        from recipesearch.models.tv import forward_problem

        problem = forward_problem(model, num_classes, in_channels, image_size, image_size)
        if problem is not None:
            raise ConfigError("model.name", f"{path}: {problem} (the data has {num_classes} classes, "
                                            f"{in_channels} channel(s), {image_size} px)")
    return model


def _natural_key(name: str) -> list[str | int]:
    # resnet8 < resnet20 < resnet110, as a reader expects (plain sorting puts resnet110 first).
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def _unknown_message(name: str) -> str:
    return (f"unknown model '{name}'; allowed: {', '.join(list_models())}, {TV_PREFIX}<torchvision name>, or "
            "an import path module:factory of your own")
