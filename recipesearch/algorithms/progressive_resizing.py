"""Progressive resizing: train on down-scaled images first and grow them to full size during training.

MosaicML Composer, Progressive Resizing (after fast.ai's progressive resizing, Howard 2018).
"""
from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, Field, model_validator

from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State

Mode = Literal["resize", "crop"]


def scale_at(progress: float, initial_scale: float, delay_fraction: float, finetune_fraction: float) -> float:
    """Composer's schedule: 1) ``initial_scale`` until ``delay_fraction`` of training, 2) a linear ramp,
    3) full size (1.0) for the last ``finetune_fraction``."""
    ramp_end = 1.0 - finetune_fraction
    if progress < delay_fraction:
        return initial_scale
    if progress >= ramp_end:
        return 1.0
    return initial_scale + (1.0 - initial_scale) * (progress - delay_fraction) / (ramp_end - delay_fraction)


def scaled_size(side: int, scale: float, size_increment: int = 1) -> int:
    """``side * scale`` rounded to a multiple of ``size_increment`` (at least one increment, at most ``side``).

    Rounded sizes keep the number of distinct shapes small (fewer cuDNN autotuning / recompilations).
    """
    if scale >= 1.0:
        return side
    size = size_increment * math.floor(side * scale / size_increment + 0.5)  # half rounds up
    return min(side, max(size_increment, size, 1))


def resize_batch(
    x: torch.Tensor,
    y: torch.Tensor,
    scale: float,
    mode: Mode = "resize",
    size_increment: int = 1,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Shrink a batch to ``scale`` of its height and width; classification targets pass through.

    ``resize``: antialiased bilinear interpolation (the whole image, fewer pixels).
    ``crop``: one random window of the smaller size for the whole batch, as in Composer.
    """
    h, w = x.shape[-2:]
    nh, nw = scaled_size(h, scale, size_increment), scaled_size(w, scale, size_increment)
    if (nh, nw) == (h, w):
        return x, y
    if mode == "resize":
        return F.interpolate(x, size=(nh, nw), mode="bilinear", align_corners=False, antialias=True), y
    dev = generator.device if generator is not None else "cpu"
    top = int(torch.randint(h - nh + 1, (1,), generator=generator, device=dev))
    left = int(torch.randint(w - nw + 1, (1,), generator=generator, device=dev))
    return x[..., top:top + nh, left:left + nw], y


class ProgressiveResizingParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Mode = Field("resize", description="resize (interpolate) or crop to the smaller size")
    initial_scale: float = Field(0.5, gt=0, le=1, description="image side at the start, as a fraction")
    delay_fraction: float = Field(0.4, ge=0, le=1, description="share of training at the initial scale")
    finetune_fraction: float = Field(0.2, ge=0, le=1, description="share of training at full size at the end")
    size_increment: int = Field(4, ge=1, description="sizes are rounded to a multiple of this (pixels)")

    @model_validator(mode="after")
    def _fractions_fit(self) -> ProgressiveResizingParams:
        if self.delay_fraction + self.finetune_fraction > 1:
            raise ValueError("delay_fraction + finetune_fraction must be <= 1")
        return self


@register_algorithm
class ProgressiveResizing(Algorithm):
    name = "progressive_resizing"
    description = "Train on smaller images early, growing to full size; cheaper early steps"
    citation = "MosaicML Composer, Progressive Resizing (after Howard, fast.ai 2018)"
    events = frozenset({Event.AFTER_DATALOADER})
    # After mixing (20) and label smoothing (30): mixing at full resolution, then one resize of the result.
    order = 40
    Params = ProgressiveResizingParams

    def apply(self, event: Event, state: State) -> None:
        p = self.params
        # On state.progress (steps / total steps), so a budget stretches or shrinks the whole schedule.
        scale = scale_at(state.progress, p.initial_scale, p.delay_fraction, p.finetune_fraction)
        x, state.y = resize_batch(state.x, state.y, scale, p.mode, p.size_increment)
        state.x = x.contiguous(memory_format=torch.channels_last) if state.channels_last else x
        state.extra["progressive_resizing_scale"] = scale
