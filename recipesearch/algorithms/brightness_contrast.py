"""Brightness/contrast jitter: each training image gets its own brightness and contrast factor, drawn and applied
on the whole batch at once (no loop over images, no CPU pipeline: on a GPU it costs a few elementwise kernels).

The CIFAR-10 speed record of 2025 (hiverge/cifar10-speedrun: 94 % in 2.015 s on an A100, from airbench94_muon's
2.59 s) added this colour augmentation to airbench's flip and translate; torchvision's ``ColorJitter`` draws its
factors the same way, uniform in [1 - b, 1 + b]. Brightness scales the pixel values; contrast blends each image
with its mean grey level (PIL's ImageEnhance, ``_augment_ops``), in [0, 1] pixel units, clipped there.
"""
from __future__ import annotations

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator

from recipesearch.algorithms._augment_ops import Stats, brightness, contrast, from_unit, rand_device, to_unit
from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


def jitter_factors(n: int, strength: float, device: torch.device,
                   generator: torch.Generator | None = None) -> torch.Tensor:
    """``n`` factors uniform in [1 - strength, 1 + strength] on ``device``, drawn where ``generator`` lives."""
    drawn = torch.rand(n, generator=generator, device=rand_device(torch.empty(0, device=device), generator))
    return (1.0 + strength * (2.0 * drawn - 1.0)).to(device)


def brightness_contrast_batch(x: torch.Tensor, brightness_strength: float, contrast_strength: float,
                              generator: torch.Generator | None = None, *, mean: Stats | None = None,
                              std: Stats | None = None) -> torch.Tensor:
    """``x`` [B, C, H, W] (normalised with ``mean``/``std``, or in [0, 1] when they are None) with each image's
    brightness, then contrast, scaled by its own factor in [1 - strength, 1 + strength]."""
    unit = to_unit(x.float(), mean, std)
    if brightness_strength > 0:
        unit = brightness(unit, jitter_factors(len(x), brightness_strength, unit.device, generator))
    if contrast_strength > 0:
        unit = contrast(unit, jitter_factors(len(x), contrast_strength, unit.device, generator))
    return from_unit(unit, mean, std).to(x.dtype)


class BrightnessContrastParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    brightness: float = Field(0.2, ge=0, le=1, description="factor range 1 ± brightness (0: brightness unchanged)")
    contrast: float = Field(0.2, ge=0, le=1, description="factor range 1 ± contrast (0: contrast unchanged)")

    @model_validator(mode="after")
    def _does_something(self) -> BrightnessContrastParams:
        if self.brightness == 0 and self.contrast == 0:
            raise ValueError("brightness and contrast are both 0: the method would change nothing")
        return self


@register_algorithm
class BrightnessContrast(Algorithm):
    name = "brightness_contrast"
    description = "Scale each training image's brightness and contrast by its own random factor, on the batch"
    citation = "hiverge/cifar10-speedrun (2025, 94% on CIFAR-10 in 2.015 s); torchvision ColorJitter"
    events = frozenset({Event.AFTER_DATALOADER})
    order = 10  # per-image augmentation: before cutout (15) and mixing (20), as in a data pipeline
    Params = BrightnessContrastParams

    def apply(self, event: Event, state: State) -> None:
        state.x = brightness_contrast_batch(state.x, self.params.brightness, self.params.contrast,
                                            mean=state.data.mean, std=state.data.std)
