"""Flip test-time augmentation: evaluate the mean of the logits of each image and of its horizontal mirror.

Keller Jordan's airbench (KellerJordan/cifar10-airbench, ``airbench94.py``: ``infer_mirror``,
``0.5 * net(x) + 0.5 * net(x.flip(-1))``, i.e. logits are averaged, not probabilities). airbench94's
default is ``tta_level: 2`` (mirror + two one-pixel translations, 6 views); this is its level 1 (2 views).

Training is untouched; evaluation costs two forward passes per image. That cost is outside
``train_seconds`` and shows in ``TrainResult.eval_seconds`` (airbench adds its TTA time to its reported
total instead). Refused where the dataset says a mirror changes the label (``DataBundle.hflip`` false:
digits), because there the mirrored view votes for another class.
"""
from __future__ import annotations

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn

from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.errors import ConfigError
from recipesearch.train.events import Event
from recipesearch.train.state import State


def flip_tta_logits(model: nn.Module, x: Tensor) -> Tensor:
    """(model(x) + model(x mirrored left-right)) / 2 for a batch [B, C, H, W]."""
    return 0.5 * model(x) + 0.5 * model(torch.flip(x, dims=(-1,)))


class FlipTTAModel(nn.Module):
    """Wraps the evaluated model so that its forward is ``flip_tta_logits``; shares its weights."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x: Tensor) -> Tensor:
        return flip_tta_logits(self.model, x)


class FlipTTAParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    force: bool = Field(False, description="run even where the dataset says a flip changes the label "
                                           "(controls and tests only)")


@register_algorithm
class FlipTTA(Algorithm):
    name = "flip_tta"
    description = ("Evaluate the mean logits of each image and its mirror; costs a second forward pass at "
                   "evaluation (eval_seconds), none in training")
    citation = "Keller Jordan, airbench (cifar10-airbench, airbench94.py infer_mirror, tta_level 1)"
    # INIT: refuse an unflippable dataset before any training. FIT_END: wrap whichever model is evaluated.
    events = frozenset({Event.INIT, Event.FIT_END})
    order = 100  # last at FIT_END: after EMA/SWA (50) have chosen the evaluated weights
    Params = FlipTTAParams

    def apply(self, event: Event, state: State) -> None:
        if event is Event.INIT:
            if not state.data.hflip and not self.params.force:
                raise ConfigError("algorithms.flip_tta", f"dataset {state.data.name} does not allow a horizontal "
                                                         "flip (a mirrored image may be another class)")
            return
        state.eval_model = FlipTTAModel(state.eval_model or state.model)
