"""Proxy-selected batches: a small proxy model, trained alongside on every whole batch, picks the hardest fraction of
each batch for the main model.

Keller Jordan's airbench96 (``airbench96_faster.py``, 2024) trains a small proxy network beside the main one and
trains the main network only on the half of each batch the proxy finds hardest: the proxy's forward and backward
cost a fraction of the main model's, and the main model skips the examples it would learn least from. The proxy
trains on every example, so its notion of "hard" keeps up with the data. Here the proxy is, by default, the
recipe's own model at ``width`` times its width (a narrowed copy, built from the recipe, not from the main model's
weights); a model without a width option (a torchvision or user model) names a small factory in ``model``. Its
time counts in ``train_seconds``: it runs inside the training step.
"""
from __future__ import annotations

import inspect
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import nn

from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.pool_before_norm import pool_before_norm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.algorithms.selective_backprop import PER_SAMPLE_LOSS_KEY, PerSampleLoss, per_sample_cross_entropy
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State

FIELD = "algorithms.proxy_selection"


def select_by_proxy(x: torch.Tensor, y: torch.Tensor, proxy: nn.Module, optimizer: torch.optim.Optimizer,
                    keep: float = 0.5, loss_fn: PerSampleLoss | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """One training step of ``proxy`` on the whole batch, and the ``int(keep * B)`` samples (at least one) it found
    hardest (highest per-sample loss in that step's forward pass), in batch order.

    ``loss_fn`` maps (outputs, targets) to a [B] tensor; None means per-sample (soft) cross-entropy."""
    losses = (loss_fn or per_sample_cross_entropy)(proxy(x), y).float()
    optimizer.zero_grad(set_to_none=True)
    losses.mean().backward()
    optimizer.step()
    b = x.shape[0]
    n_keep = min(b, max(1, int(keep * b)))
    if n_keep == b:
        return x, y
    idx = losses.detach().topk(n_keep, sorted=False).indices.sort().values
    return x[idx], y[idx]


def _width_default(name: str) -> Any:
    """The default of the ``width`` option of model ``name``'s factory (ours or an import path); None: it has none."""
    from recipesearch.models.registry import TV_PREFIX, imported_factory, is_import_path, model_info

    if name.startswith(TV_PREFIX):
        return None
    fn = imported_factory(name) if is_import_path(name) else model_info(name).fn
    try:
        param = inspect.signature(fn).parameters.get("width")
    except (TypeError, ValueError):
        return None
    return None if param is None or param.default is inspect.Parameter.empty else param.default


def proxy_options(name: str, options: dict[str, Any], width: float) -> dict[str, Any]:
    """Model ``name``'s options narrowed to ``width`` of its width: an integer width (channels) rounded, at least 1;
    a fractional one (a multiplier) scaled. A one-line ConfigError when the model has no width option."""
    given = options.get("width", _width_default(name))
    if isinstance(given, bool) or not isinstance(given, (int, float)):
        raise ConfigError(f"{FIELD}.model", f"model {name!r} has no width option to narrow: name a small model "
                                            "factory for the proxy (a registered name or module:function)")
    narrowed = max(1, round(given * width)) if isinstance(given, int) else float(given) * width
    return {**options, "width": narrowed}


def build_proxy(state: State, width: float, model: str | None) -> nn.Module:
    """The proxy for ``state``'s recipe and data: ``model`` when named, else the recipe's model narrowed.

    It takes the cheapest layout that computes the same function: channels_last when the model is (its batches
    arrive NHWC) and max-pool before BatchNorm (pool_before_norm; the proxy has no BlurPool, so the order
    commutes). For the CNN at width 8 on 28x28 (1 thread): a step 24 ms NCHW, 16 ms NHWC, 11 ms NHWC reordered."""
    from recipesearch.models.registry import create_model

    spec = state.recipe.model
    name, options = (model, {}) if model else (spec.name, proxy_options(spec.name, spec.kwargs, width))
    proxy = create_model(name, num_classes=state.data.num_classes, in_channels=state.data.channels,
                         image_size=state.data.image_size, **options)
    pool_before_norm(proxy)
    if state.channels_last:
        proxy = proxy.to(memory_format=torch.channels_last)
    return proxy.to(state.device).train()


class ProxySelectionParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    keep: float = Field(0.5, gt=0, le=1, description="fraction of each batch the main model trains on")
    width: float = Field(0.25, gt=0, le=1, description="the proxy's width as a fraction of the model's")
    model: str | None = Field(None, description="a small model for the proxy (registry name or module:function); "
                                                "default: the recipe's model narrowed to width")
    start: float = Field(0.0, ge=0, lt=1, description="training progress at which selection starts")


@register_algorithm
class ProxySelection(Algorithm):
    name = "proxy_selection"
    description = "A narrowed proxy model trained alongside keeps the hardest fraction of each batch for the model"
    citation = ("Jordan 2024, airbench96_faster.py (KellerJordan/cifar10-airbench); "
                "Coleman et al. 2020, Selection via Proxy")
    events = frozenset({Event.FIT_START, Event.AFTER_DATALOADER})
    order = 50  # last at AFTER_DATALOADER, as selective backprop: the proxy scores the batch as it will be trained
    Params = ProxySelectionParams

    def __init__(self, **params: Any):
        super().__init__(**params)
        self.proxy: nn.Module | None = None
        self.optimizer: torch.optim.Optimizer | None = None

    def match(self, event: Event, state: State) -> bool:
        return event == Event.FIT_START or (event == Event.AFTER_DATALOADER and state.progress >= self.params.start)

    def apply(self, event: Event, state: State) -> None:
        if event == Event.FIT_START:
            if self.proxy is None:  # a run resumed from a checkpoint keeps the proxy it had
                self.proxy = build_proxy(state, self.params.width, self.params.model)
                self.optimizer = torch.optim.SGD(self.proxy.parameters(), lr=self._lr(state), momentum=0.9,
                                                 nesterov=True)
            return
        for group in self.optimizer.param_groups:  # the main model's LR, as its schedule moves it
            group["lr"] = self._lr(state)
        with state.autocast():
            state.x, state.y = select_by_proxy(state.x, state.y, self.proxy, self.optimizer, self.params.keep,
                                               state.extra.get(PER_SAMPLE_LOSS_KEY))

    @staticmethod
    def _lr(state: State) -> float:
        groups = state.optimizer.param_groups if state.optimizer is not None else []
        return float(groups[0]["lr"]) if groups else 0.1
