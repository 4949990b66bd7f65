"""Flip test-time augmentation: evaluate the mean of the logits of each image and of its horizontal mirror.

Keller Jordan's airbench (KellerJordan/cifar10-airbench, ``airbench94.py``: ``infer_mirror``,
``0.5 * net(x) + 0.5 * net(x.flip(-1))``, i.e. logits are averaged, not probabilities): its ``tta_level`` 1.
``translate: 1`` is its level 2, airbench94's default (Jordan 2024, arXiv 2404.00498, "multi-crop
evaluation"): half the weight on that mirror pair, a quarter on the pair of the image shifted 1 px down and
right and a quarter on the pair shifted 1 px up and left (borders filled by reflection): 6 views.

With ``confidence`` below 1 only the images the model is unsure of get the extra views (the 2025 CIFAR-10 record,
hiverge/cifar10-speedrun): one plain pass for every image, the others for those whose top softmax probability is
below the threshold. Training is untouched; evaluation costs two forward passes per image (six with ``translate``;
fewer with ``confidence``). That cost is outside
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
from recipesearch.data.augment import pad
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


def flip_tta_logits(model: nn.Module, x: Tensor, plain: Tensor | None = None) -> Tensor:
    """(model(x) + model(x mirrored left-right)) / 2 for a batch [B, C, H, W]; ``plain``: model(x), if known."""
    return 0.5 * (model(x) if plain is None else plain) + 0.5 * model(torch.flip(x, dims=(-1,)))


def shifted(x: Tensor, dy: int, dx: int) -> Tensor:
    """``x`` [B, C, H, W] moved ``dy`` px down and ``dx`` px right (negative: up, left), the uncovered border
    filled by reflection: output pixel (i, j) is input pixel (i - dy, j - dx) of the reflect-padded image."""
    p = max(abs(dy), abs(dx))
    if p == 0:
        return x
    h, w = x.shape[-2:]
    return pad(x, p, "reflect")[..., p - dy : p - dy + h, p - dx : p - dx + w]


def flip_translate_tta_logits(model: nn.Module, x: Tensor, pixels: int = 1, plain: Tensor | None = None) -> Tensor:
    """airbench94's tta_level 2: 1/2 of the mirror pair of ``x``, 1/4 of the mirror pair of ``x`` shifted by
    (+pixels, +pixels) and 1/4 of that of ``x`` shifted by (-pixels, -pixels); ``pixels`` 0 is the pair alone.
    ``plain``: model(x), if already computed (not computed again)."""
    if pixels == 0:
        return flip_tta_logits(model, x, plain)
    return (0.5 * flip_tta_logits(model, x, plain) + 0.25 * flip_tta_logits(model, shifted(x, pixels, pixels))
            + 0.25 * flip_tta_logits(model, shifted(x, -pixels, -pixels)))


def low_confidence_tta_logits(model: nn.Module, x: Tensor, confidence: float, pixels: int = 0) -> Tensor:
    """The plain logits of the images the model is sure of (top softmax probability >= ``confidence``), the TTA
    logits (``flip_translate_tta_logits``) of the others: the extra views cost forward passes only where the
    prediction may change (the 2025 CIFAR-10 record's test-time augmentation). ``confidence`` 1: every image."""
    plain = model(x)
    unsure = plain.float().softmax(-1).amax(-1) < confidence
    if not bool(unsure.any()):
        return plain
    out = plain.clone()
    out[unsure] = flip_translate_tta_logits(model, x[unsure], pixels, plain[unsure]).to(out.dtype)
    return out


class FlipTTAModel(nn.Module):
    """Wraps the evaluated model so that its forward is ``low_confidence_tta_logits``; shares its weights."""

    def __init__(self, model: nn.Module, translate: int = 0, confidence: float = 1.0):
        super().__init__()
        self.model = model
        self.translate = translate
        self.confidence = confidence

    def forward(self, x: Tensor) -> Tensor:
        if self.confidence >= 1.0:  # every image: no first pass to sort them
            return flip_translate_tta_logits(self.model, x, self.translate)
        return low_confidence_tta_logits(self.model, x, self.confidence, self.translate)


class FlipTTAParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    force: bool = Field(False, description="run even where the dataset says a flip changes the label "
                                           "(controls and tests only)")
    translate: int = Field(0, ge=0, le=8, description="also average the mirror pairs of the images shifted this "
                                                      "many px diagonally both ways (airbench94's level 2: 1)")
    confidence: float = Field(1.0, gt=0, le=1, description="only images whose top softmax probability is below "
                                                           "this get the extra views (1: every image)")


@register_algorithm
class FlipTTA(Algorithm):
    name = "flip_tta"
    description = ("Evaluate the mean logits of each image and its mirror (and, with translate, of 1-px shifts; with "
                   "confidence < 1, only of the images the model is unsure of); costs up to 2 (6) forward passes "
                   "at evaluation (eval_seconds), none in training")
    citation = ("Keller Jordan, airbench (cifar10-airbench, airbench94.py infer_mirror, tta_level 1; "
                "translate: tta_level 2, Jordan 2024 arXiv 2404.00498)")
    # INIT: refuse an unflippable dataset before any training. FIT_END: wrap whichever model is evaluated.
    events = frozenset({Event.INIT, Event.FIT_END})
    order = 100  # last at FIT_END: after EMA/SWA (50) have chosen the evaluated weights
    Params = FlipTTAParams

    def apply(self, event: Event, state: State) -> None:
        if event is Event.INIT:
            if not state.data.hflip and not self.params.force:
                raise ConfigError("algorithms.flip_tta", f"dataset {state.data.name} does not allow a horizontal "
                                                         "flip (a mirrored image may be another class)")
            if self.params.translate >= state.data.image_size:
                raise ConfigError("algorithms.flip_tta.translate", f"{self.params.translate} px reflected needs "
                                                                   f"images larger than that; these are "
                                                                   f"{state.data.image_size} px")
            return
        state.eval_model = FlipTTAModel(state.eval_model or state.model, self.params.translate,
                                        self.params.confidence)
