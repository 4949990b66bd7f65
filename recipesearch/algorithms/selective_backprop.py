"""Selective backprop: back-propagate only the samples with the highest loss in each batch.

Jiang et al. 2019, "Accelerating Deep Learning by Focusing on the Biggest Losers"; schedule as in
Composer's SelectiveBackprop (MosaicML).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, Field, model_validator
from torch import nn

from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State

PerSampleLoss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (outputs, targets) -> [B]
# A loss-replacing algorithm (bce_loss) puts its per-sample form here, so selection ranks by the loss trained on.
PER_SAMPLE_LOSS_KEY = "per_sample_loss_fn"


def per_sample_cross_entropy(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy per sample for class indices [B] or class distributions [B, K] (MixUp, smoothing)."""
    return F.cross_entropy(outputs.float(), targets, reduction="none")


@contextmanager
def frozen_batchnorm_stats(model: nn.Module) -> Iterator[None]:
    """Keep the scoring pass out of BatchNorm's running statistics.

    The model stays in train mode (batch statistics, like the pass being approximated), but momentum 0
    leaves running_mean/var untouched; num_batches_tracked is restored afterwards.
    """
    saved = []
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.track_running_stats and m.training:
            tracked = m.num_batches_tracked.clone() if m.num_batches_tracked is not None else None
            saved.append((m, m.momentum, tracked))
            m.momentum = 0.0
    try:
        yield
    finally:
        for m, momentum, tracked in saved:
            m.momentum = momentum
            if tracked is not None:
                m.num_batches_tracked.copy_(tracked)


def select_using_loss(
    x: torch.Tensor,
    y: torch.Tensor,
    model: nn.Module,
    loss_fn: PerSampleLoss | None = None,
    keep: float = 0.5,
    scale_factor: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``int(keep * B)`` samples (at least one) with the highest per-sample loss, in batch order.

    Losses come from a forward pass without gradients, on a copy down-scaled by ``scale_factor`` when it
    is below 1 (cheaper scoring). Selection is deterministic top-k; the paper and Composer sample with a
    probability rising with the loss's rank, which keeps some easy samples — top-k is the limit of a
    sharp rank weighting, simpler to test and needs no random draw.
    ``loss_fn`` maps (outputs, targets) to a [B] tensor; None means per-sample (soft) cross-entropy.
    """
    b = x.shape[0]
    n_keep = min(b, max(1, int(keep * b)))
    if n_keep == b:
        return x, y
    loss_fn = loss_fn or per_sample_cross_entropy
    scored = x
    if scale_factor < 1:
        scored = F.interpolate(x, scale_factor=scale_factor, mode="bilinear", align_corners=False, antialias=True)
    with torch.no_grad(), frozen_batchnorm_stats(model):
        losses = loss_fn(model(scored), y).float()
    idx = losses.topk(n_keep, sorted=False).indices.sort().values
    return x[idx], y[idx]


class SelectiveBackpropParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    start: float = Field(0.5, ge=0, le=1, description="training progress at which selection starts")
    end: float = Field(0.9, ge=0, le=1, description="training progress at which selection stops")
    keep: float = Field(0.5, gt=0, le=1, description="fraction of each batch kept for the backward pass")
    scale_factor: float = Field(1.0, gt=0, le=1, description="image scale of the scoring forward pass")
    interval: int = Field(1, ge=1, description="select on every interval-th step only")

    @model_validator(mode="after")
    def _start_before_end(self) -> SelectiveBackpropParams:
        if self.start > self.end:
            raise ValueError("start must be <= end")
        return self


@register_algorithm
class SelectiveBackprop(Algorithm):
    name = "selective_backprop"
    description = "Backprop only the highest-loss samples mid-training; cheaper steps for an extra forward"
    citation = "Jiang et al. 2019, Accelerating Deep Learning by Focusing on the Biggest Losers"
    events = frozenset({Event.AFTER_DATALOADER})
    order = 50  # last at AFTER_DATALOADER: scores the batch as it will be trained (mixed, resized)
    Params = SelectiveBackpropParams

    def match(self, event: Event, state: State) -> bool:
        p = self.params
        return event in self.events and p.start <= state.progress < p.end and state.step % p.interval == 0

    def apply(self, event: Event, state: State) -> None:
        p = self.params
        with state.autocast():
            state.x, state.y = select_using_loss(state.x, state.y, state.model, state.extra.get(PER_SAMPLE_LOSS_KEY),
                                                 p.keep, p.scale_factor)
