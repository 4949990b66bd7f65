"""Model surgery shared by the INIT-time algorithms: swap modules by predicate, unwrap compiled models."""
from __future__ import annotations

from collections.abc import Callable

from torch import nn


def replace_modules(
    model: nn.Module, match: Callable[[nn.Module], bool], build: Callable[[nn.Module], nn.Module]
) -> tuple[nn.Module, int]:
    """Replace every submodule for which ``match`` is true by ``build(module)``; returns (model, count).

    Targets are collected before any replacement, so modules that ``build`` creates (an SE block's own
    convs, a BlurConv2d's inner conv) are never visited again. The returned model is ``build(model)`` when
    the root itself matches, so callers must use the return value.
    """
    if match(model):
        return build(model), 1
    targets = [(name, m) for name, m in model.named_modules() if name and match(m)]
    for name, module in targets:
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, attr, build(module))  # works for Sequential children too ("0", "1", ...)
    return model, len(targets)


def unwrap(model: nn.Module) -> nn.Module:
    """The eager module behind a ``torch.compile`` wrapper (they share parameters), else ``model``."""
    return getattr(model, "_orig_mod", model)
