"""Translate: the random crop of airbench94, a shift of up to N pixels with the border filled by reflection.

K. Jordan 2024, "94% on CIFAR-10 in 3.29 Seconds on a Single GPU" (arXiv 2404.00498): training images are
padded by 2 px by reflection and a random 32x32 window is cut, i.e. each image moves by up to 2 px in each
direction and the strip it uncovers shows the image mirrored at its edge, not black. The usual CIFAR crop
(zero padding of 4 px, ``data.crop_padding``) moves further and fills with zeros.

It replaces the loader's crop for the run (``data/loader.py``: ``crop_padding`` and ``padding_mode``, set at
FIT_START and carried by the loader's checkpoint position), whatever ``data.crop_padding`` says; the flip is
unchanged. Same cost as the crop it replaces. Refused where the recipe turns augmentation off. A hand-written
loop (``recipesearch.apply``) augments its own batches: there it does nothing, with a warning.
"""
from __future__ import annotations

from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, Field

from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.data.augment import random_crop
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State

__all__ = ["Translate", "random_translate"]


def random_translate(x: torch.Tensor, pixels: int, generator: torch.Generator | None = None,
                     padding_mode: Literal["reflect", "zeros"] = "reflect") -> torch.Tensor:
    """Each image of ``x`` [B, C, H, W] shifted by a random offset of up to ``pixels`` px in each direction, the
    uncovered border filled by ``padding_mode`` (a random crop of the padded image; ``data.augment.random_crop``)."""
    return random_crop(x, pixels, generator, padding_mode)


class TranslateParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pixels: int = Field(2, ge=1, le=64, description="largest shift in each direction (airbench94: 2)")
    padding_mode: Literal["reflect", "zeros"] = Field("reflect", description="what fills the uncovered border "
                                                                             "(airbench94: reflect)")


@register_algorithm
class Translate(Algorithm):
    name = "translate"
    description = "Replace the random crop by shifts of up to N px with reflected borders (airbench94: 2 px)"
    citation = "Jordan 2024, 94% on CIFAR-10 in 3.29 Seconds on a Single GPU (arXiv 2404.00498), translate"
    # INIT: refuse before anything trains. FIT_START: the trainer's loader exists (it is built after INIT).
    events = frozenset({Event.INIT, Event.FIT_START})
    order = 15
    Params = TranslateParams
    augments_in_loader = True  # own_loop.py: a hand-written loop's batches are its own

    def apply(self, event: Event, state: State) -> None:
        p = self.params
        if event is Event.INIT:
            field = f"algorithms.{self.name}"
            if not state.recipe.data.augment:
                raise ConfigError(field, "data.augment is false: the loader does not crop (set it true)")
            if p.padding_mode == "reflect" and p.pixels >= state.data.image_size:
                raise ConfigError(f"{field}.pixels", f"{p.pixels} px reflected needs images larger than that; these "
                                                     f"are {state.data.image_size} px")
            return
        state.train_loader.crop_padding = p.pixels
        state.train_loader.padding_mode = p.padding_mode
