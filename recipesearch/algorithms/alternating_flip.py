"""Alternating flip: a derandomised horizontal flip, each image mirrored in every other epoch.

K. Jordan 2024, "94% on CIFAR-10 in 3.29 Seconds on a Single GPU" (arXiv 2404.00498), the paper's own
contribution: epoch 0 mirrors a random half of the training images, as a random flip would; after that every
odd epoch mirrors exactly the other half and every even epoch the first half again. Each image is then seen
both ways in any two consecutive epochs, where a coin per image and epoch repeats the same view in both with
probability 1/2. The paper finds it better than the random flip wherever flipping helps at all, the more so
the fewer the epochs.

It replaces the loader's random flip (``data/loader.py``: ``first_epoch_flips``, set at FIT_START and
carried by the loader's checkpoint position); crops are unchanged. Which half epoch 0 mirrors is drawn from
the recipe's seed alone, so data-parallel ranks, each with its own crop generator, agree on every image.
Refused where the dataset says a mirror changes the label (digits) or the recipe turns augmentation off.
A hand-written loop (``recipesearch.apply``) augments its own batches: there it does nothing, with a warning.
"""
from __future__ import annotations

import torch
from pydantic import BaseModel, ConfigDict, Field

from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.data.augment import alternating_flip_mask, mirror_where
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State

__all__ = ["AlternatingFlip", "alternating_flip_batch", "alternating_flip_mask", "first_epoch_flips"]


def first_epoch_flips(num_images: int, seed: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """bool [num_images]: the images epoch 0 mirrors, each with probability 1/2, drawn from ``seed`` alone."""
    generator = torch.Generator().manual_seed(seed)
    return (torch.rand(num_images, generator=generator) < 0.5).to(device)


def alternating_flip_batch(x: torch.Tensor, rows: torch.Tensor | slice, epoch: int,
                           first_epoch_flips: torch.Tensor) -> torch.Tensor:
    """The batch ``x`` [B, C, H, W] (rows ``rows`` of the training set) with the images that ``epoch`` mirrors
    mirrored: what the loader does in place of its random flip (``data/loader.py``)."""
    return mirror_where(x, alternating_flip_mask(first_epoch_flips, rows, epoch))


class AlternatingFlipParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    force: bool = Field(False, description="run even where the dataset says a flip changes the label "
                                           "(controls and tests only)")


@register_algorithm
class AlternatingFlip(Algorithm):
    name = "alternating_flip"
    description = ("Mirror each training image in every other epoch (a random half in epoch 0) instead of by a coin "
                   "per epoch; costs nothing")
    citation = "Jordan 2024, 94% on CIFAR-10 in 3.29 Seconds on a Single GPU (arXiv 2404.00498), alternating flip"
    # INIT: refuse before anything trains. FIT_START: the trainer's loader exists (it is built after INIT).
    events = frozenset({Event.INIT, Event.FIT_START})
    order = 15
    Params = AlternatingFlipParams
    augments_in_loader = True  # own_loop.py: a hand-written loop's batches are its own

    def apply(self, event: Event, state: State) -> None:
        if event is Event.INIT:
            field = f"algorithms.{self.name}"
            if not state.data.hflip and not self.params.force:
                raise ConfigError(field, f"dataset {state.data.name} does not allow a horizontal flip (a mirrored "
                                         "image may be another class)")
            if not state.recipe.data.augment:
                raise ConfigError(field, "data.augment is false: the loader does not flip (set it true)")
            return
        loader = state.train_loader
        loader.hflip = True  # on digits only with force: the mechanics of a control run
        loader.first_epoch_flips = first_epoch_flips(loader.num_samples, state.recipe.seed, loader.device)
