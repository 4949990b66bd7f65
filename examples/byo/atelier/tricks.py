"""Random erasing (Zhong et al. 2020, "Random Erasing Data Augmentation", AAAI) as a recipesearch method.

A method is two pieces, as recipesearch's own are: a pure function on tensors (``random_erase``, testable
and usable without recipesearch), and an ``Algorithm`` subclass that calls it at an event of the training
loop, with its hyperparameters in a pydantic ``Params`` model whose defaults are the paper's.
"""
from __future__ import annotations

import math

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator

from recipesearch.algorithms import Algorithm
from recipesearch.hooks import Event, State


def erasing_mask(batch_size: int, height: int, width: int, probability: float, min_area: float, max_area: float,
                 min_aspect: float, device: torch.device, generator: torch.Generator | None = None) -> torch.Tensor:
    """Bool [B, H, W]: for each image, with ``probability``, true inside one rectangle, else all false.

    The rectangle's area is a uniform share in [min_area, max_area] of the image and its aspect ratio
    (height / width) log-uniform in [min_aspect, 1 / min_aspect]; it lies wholly inside the image at a
    uniform position. Where the paper draws again until a rectangle fits, its sides are clipped to the
    image here: one draw per image, vectorised over the batch.
    """
    draw_on = generator.device if generator is not None else device  # a generator draws on its own device

    def uniform(low: float, high: float) -> torch.Tensor:
        return low + (high - low) * torch.rand(batch_size, generator=generator, device=draw_on).to(device)

    erased = uniform(0.0, 1.0) < probability
    area = uniform(min_area, max_area) * height * width
    aspect = uniform(math.log(min_aspect), -math.log(min_aspect)).exp()
    rect_h = (area * aspect).sqrt().round().clamp(1, height).long()
    rect_w = (area / aspect).sqrt().round().clamp(1, width).long()
    top = (uniform(0.0, 1.0) * (height - rect_h + 1)).floor().long()
    left = (uniform(0.0, 1.0) * (width - rect_w + 1)).floor().long()
    rows = torch.arange(height, device=device)
    cols = torch.arange(width, device=device)
    # [B, H, 1] & [B, 1, W]: each image's rectangle without a loop over the batch
    in_rows = (rows >= top[:, None]) & (rows < (top + rect_h)[:, None])
    in_cols = (cols >= left[:, None]) & (cols < (left + rect_w)[:, None])
    return in_rows[:, :, None] & in_cols[:, None, :] & erased[:, None, None]


def random_erase(x: torch.Tensor, probability: float = 0.5, min_area: float = 0.02, max_area: float = 0.4,
                 min_aspect: float = 0.3, generator: torch.Generator | None = None) -> torch.Tensor:
    """``x`` [B, C, H, W] with one random rectangle per image (each with ``probability``) filled with noise.

    The fill is standard normal noise: the batch is normalised to mean 0 and standard deviation 1 per
    channel when methods see it, so this is the paper's "random values" in the images' own range.
    """
    b, c, h, w = x.shape
    mask = erasing_mask(b, h, w, probability, min_area, max_area, min_aspect, x.device, generator)
    draw_on = generator.device if generator is not None else x.device
    noise = torch.randn(x.shape, generator=generator, device=draw_on, dtype=x.dtype).to(x.device)
    return torch.where(mask[:, None], noise, x)


class RandomErasingParams(BaseModel):
    # extra="forbid": a misspelt hyperparameter in a recipe is an error, not a silent default
    model_config = ConfigDict(extra="forbid")
    probability: float = Field(0.5, ge=0, le=1, description="share of the images erased")
    min_area: float = Field(0.02, gt=0, le=1, description="smallest rectangle, as a share of the image")
    max_area: float = Field(0.4, gt=0, le=1, description="largest rectangle, as a share of the image")
    min_aspect: float = Field(0.3, gt=0, le=1, description="aspect ratios drawn in [min_aspect, 1 / min_aspect]")

    @model_validator(mode="after")
    def _area_range(self) -> RandomErasingParams:
        if self.min_area > self.max_area:
            raise ValueError(f"min_area {self.min_area:g} is larger than max_area {self.max_area:g}")
        return self


class RandomErasing(Algorithm):
    name = "random_erasing"
    description = "Fill one random rectangle per image with noise; an occlusion regulariser, like Cutout"
    citation = "Zhong et al. 2020, Random Erasing Data Augmentation"
    events = frozenset({Event.AFTER_DATALOADER})  # the batch, on its device, before the forward pass
    # recipesearch's orders at that event: per-image augmentation 10, Cutout 15, MixUp/CutMix 20. Erasing is
    # per-image augmentation too, so it runs with Cutout: before images are mixed.
    order = 15
    Params = RandomErasingParams

    def apply(self, event: Event, state: State) -> None:
        p = self.params
        # No generator: the global torch RNG, which recipesearch seeds per run, so a seed replays exactly.
        state.x = random_erase(state.x, p.probability, p.min_area, p.max_area, p.min_aspect)
