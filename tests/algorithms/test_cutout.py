"""Cutout: exactly one (border-clipped) square per image is zeroed, nothing else changes."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from recipesearch.algorithms import get_algorithm
from recipesearch.algorithms.cutout import cutout_batch
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.train.loop import fit


def _expected_mask(b: int, h: int, w: int, length: int, seed: int) -> torch.Tensor:
    """The square each sample should lose, written as a plain loop over samples (the reference)."""
    g = torch.Generator().manual_seed(seed)
    cy = torch.randint(h, (b,), generator=g)  # centres: rows first, then columns
    cx = torch.randint(w, (b,), generator=g)
    mask = torch.zeros(b, h, w, dtype=torch.bool)
    for i in range(b):
        top, left = int(cy[i]) - length // 2, int(cx[i]) - length // 2
        mask[i, max(top, 0):max(top + length, 0), max(left, 0):max(left + length, 0)] = True
    return mask


@pytest.mark.parametrize(("side", "fraction", "length"), [(10, 0.4, 4), (16, 0.5, 8), (9, 0.3, 3)])
def test_exactly_the_expected_square_is_zeroed(side: int, fraction: float, length: int) -> None:
    b = 64
    x = torch.randn(b, 3, side, side).abs() + 1  # no zeros to begin with
    out = cutout_batch(x, fraction, torch.Generator().manual_seed(7))
    mask = _expected_mask(b, side, side, length, seed=7)
    zeroed = out == 0
    assert torch.equal(zeroed, mask[:, None].expand_as(x))
    assert torch.equal(out[~zeroed], x[~zeroed])  # everything else untouched
    # away from the border the square is complete: length x length pixels
    assert (mask.sum((1, 2)) == length * length).any()
    assert (mask.sum((1, 2)) <= length * length).all() and (mask.sum((1, 2)) > 0).all()


def test_centres_cover_the_whole_image() -> None:
    x = torch.ones(2000, 1, 8, 8)
    out = cutout_batch(x, 0.25, torch.Generator().manual_seed(0))
    assert (out == 0).any(0).all()  # every pixel is cut in some image: borders included


def test_hook_zeroes_pixels() -> None:
    state = SimpleNamespace(x=torch.ones(4, 1, 16, 16))
    get_algorithm("cutout")().apply(Event.AFTER_DATALOADER, state)
    assert ((state.x == 0).sum((1, 2, 3)) > 0).all()


def test_length_fraction_bounds() -> None:
    with pytest.raises(ConfigError, match="length_fraction"):
        get_algorithm("cutout")(length_fraction=1.5)


def test_short_training_run(tiny_recipe) -> None:
    result = fit(tiny_recipe({"cutout": {}}, batch_size=32, max_duration=2))
    assert math.isfinite(result.loss) and result.accuracy > 0.3
