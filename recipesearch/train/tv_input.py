"""The trainer's start-up check of a torchvision (``tv/``) model against the batches it will get.

Run before anything is timed, so a model that cannot take the data's image size (or the smaller one that ColOut
or progressive resizing shrink batches to) fails with a one-line ConfigError rather than at the first step.
"""
from __future__ import annotations

import math

from torch import nn

from recipesearch.algorithms import Algorithm
from recipesearch.algorithms.colout import ColOut
from recipesearch.algorithms.progressive_resizing import ProgressiveResizing, scaled_size
from recipesearch.data import DataBundle
from recipesearch.models.registry import TV_PREFIX
from recipesearch.recipe import Recipe


def check_torchvision_input(model: nn.Module, recipe: Recipe, data: DataBundle, algorithms: list[Algorithm]) -> None:
    """A ``tv/`` model runs once on a 2-image batch of the data's shape, and of the smallest one that ColOut and
    progressive resizing shrink the batches to, before anything is timed: one that cannot take them (vit_b_32 or
    inception_v3 on 16 px images) is a one-line ConfigError naming the size it needs, not a crash at the first
    step (``models.tv.check_forward``: on the CPU, no gradients, once per process and shape)."""
    from recipesearch.models.tv import check_forward  # here: it imports torchvision, which only tv/ models need

    args = (model, recipe.model.name[len(TV_PREFIX):], data.num_classes, data.channels, data.image_size,
            recipe.model.kwargs)
    check_forward(*args)
    height = width = data.image_size
    shrinking = []
    for algorithm in algorithms:  # in their run order: ColOut (35) before progressive resizing (40)
        p = algorithm.params
        if isinstance(algorithm, ColOut):
            height, width = max(1, math.ceil((1 - p.p_row) * height)), max(1, math.ceil((1 - p.p_col) * width))
        elif isinstance(algorithm, ProgressiveResizing):
            scale = p.initial_scale  # the smallest: the schedule grows from it to 1
            height, width = scaled_size(height, scale, p.size_increment), scaled_size(width, scale, p.size_increment)
        else:
            continue
        shrinking.append(algorithm.name)
    if (height, width) != (data.image_size, data.image_size):
        check_forward(*args, shape=(height, width), field=f"algorithms.{shrinking[-1]}", cause=" and ".join(shrinking))
