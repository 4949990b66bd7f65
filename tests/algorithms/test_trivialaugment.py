"""TrivialAugment Wide: one op per image at a uniform strength over wide ranges."""
from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import torch

from recipesearch.algorithms import get_algorithm
from recipesearch.algorithms._augment_ops import RANDAUGMENT_SPACE, WIDE_SPACE, OpSpace, from_unit
from recipesearch.algorithms.trivialaugment import trivialaugment_batch
from recipesearch.hooks.events import Event
from recipesearch.train.loop import fit

MEAN, STD = (0.49, 0.48, 0.45), (0.25, 0.24, 0.26)


def _batch(b: int = 64, side: int = 16, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return from_unit(torch.randint(0, 256, (b, 3, side, side), generator=g).float() / 255, MEAN, STD)


def test_changes_the_batch_and_keeps_shape_dtype_and_finiteness() -> None:
    x = _batch()
    out = trivialaugment_batch(x, torch.Generator().manual_seed(0), mean=MEAN, std=STD)
    assert out.shape == x.shape and out.dtype == x.dtype and torch.isfinite(out).all()
    changed = (out - x).abs().flatten(1).amax(1) > 1e-4
    assert changed.float().mean() > 0.8


def test_same_seed_same_output() -> None:
    x = _batch()
    a = trivialaugment_batch(x, torch.Generator().manual_seed(1), mean=MEAN, std=STD)
    b = trivialaugment_batch(x, torch.Generator().manual_seed(1), mean=MEAN, std=STD)
    assert torch.equal(a, b)


def test_identity_only_space_is_unchanged() -> None:
    x = _batch()
    out = trivialaugment_batch(x, torch.Generator().manual_seed(0), mean=MEAN, std=STD,
                               space=OpSpace(ops=("identity",)))
    torch.testing.assert_close(out, x, atol=1e-5, rtol=0)


def test_strength_is_uniform_over_the_wide_range() -> None:
    # brightness only, on a flat grey image: the output/input ratio is the factor 1 ± 0.99 * U(0, 1)
    grey = torch.full((4000, 1, 4, 4), 0.25)
    brightness_only = dataclasses.replace(WIDE_SPACE, ops=("brightness",))
    out = trivialaugment_batch(grey, torch.Generator().manual_seed(0), space=brightness_only)
    factor = out[:, 0, 0, 0] / 0.25
    assert factor.min() < 0.1 and factor.max() > 1.9  # the wide range, in both directions
    assert abs(factor.mean().item() - 1.0) < 0.03
    assert abs((factor > 1).float().mean().item() - 0.5) < 0.05  # random sign
    assert WIDE_SPACE.rotate_degrees > RANDAUGMENT_SPACE.rotate_degrees


def test_one_op_per_image_chosen_uniformly() -> None:
    # identity or brightness: about half of the images come back untouched, the rest scaled as a whole
    grey = torch.full((4000, 1, 4, 4), 0.25)
    space = OpSpace(ops=("identity", "brightness"))
    out = trivialaugment_batch(grey, torch.Generator().manual_seed(0), space=space)
    untouched = (out == grey).flatten(1).all(1)
    assert abs(untouched.float().mean().item() - 0.5) < 0.05
    assert (out == out[:, :, :1, :1]).all()  # one factor per image


def test_vectorised_batch_is_fast(python_calls) -> None:
    """One batch is a fixed number of tensor operations, whatever its size (counted, not timed: a loop over its
    images would make 64x the calls for 64x the images)."""
    def calls(b: int) -> int:
        x = _batch(b=b, side=32)
        return python_calls(lambda: trivialaugment_batch(x, torch.Generator().manual_seed(0), mean=MEAN, std=STD))

    assert calls(2048) <= 2 * calls(32)


def test_hook_augments() -> None:
    state = SimpleNamespace(x=_batch(b=8), data=SimpleNamespace(mean=MEAN, std=STD))
    before = state.x
    get_algorithm("trivialaugment")().apply(Event.AFTER_DATALOADER, state)
    assert state.x.shape == before.shape and not torch.equal(state.x, before)


def test_short_training_run(tiny_recipe) -> None:
    result = fit(tiny_recipe({"trivialaugment": {}}, batch_size=32, max_duration=2))
    assert math.isfinite(result.loss) and result.accuracy > 0.3
