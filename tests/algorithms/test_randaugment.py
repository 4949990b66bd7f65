"""RandAugment and the shared batched ops (``_augment_ops``): effects, determinism, speed."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from recipesearch.algorithms import get_algorithm
from recipesearch.algorithms._augment_ops import (
    ALL_OPS,
    RANDAUGMENT_SPACE,
    OpSpace,
    affine_theta,
    apply_ops,
    autocontrast,
    equalize,
    from_unit,
    op_values,
    posterize,
    solarize,
    warp,
)
from recipesearch.algorithms.randaugment import randaugment_batch
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.train.loop import fit

MEAN, STD = (0.49, 0.48, 0.45), (0.25, 0.24, 0.26)


def _batch(b: int = 64, c: int = 3, side: int = 16, seed: int = 0) -> torch.Tensor:
    """A normalised batch decoded from uint8 pixels, like the loader's."""
    g = torch.Generator().manual_seed(seed)
    pixels = torch.randint(0, 256, (b, c, side, side), generator=g).float() / 255
    return from_unit(pixels, MEAN[:c], STD[:c])


def test_changes_the_batch_and_keeps_shape_dtype_and_finiteness() -> None:
    x = _batch()
    out = randaugment_batch(x, depth=2, severity=9, generator=torch.Generator().manual_seed(0), mean=MEAN, std=STD)
    assert out.shape == x.shape and out.dtype == x.dtype
    assert torch.isfinite(out).all()
    changed = (out - x).abs().flatten(1).amax(1) > 1e-4
    assert changed.float().mean() > 0.8  # identity (1 op in 14) is rarely drawn twice


def test_same_seed_same_output_other_seed_other_output() -> None:
    x = _batch()
    a = randaugment_batch(x, 1, 9, torch.Generator().manual_seed(3), mean=MEAN, std=STD)
    b = randaugment_batch(x, 1, 9, torch.Generator().manual_seed(3), mean=MEAN, std=STD)
    c = randaugment_batch(x, 1, 9, torch.Generator().manual_seed(4), mean=MEAN, std=STD)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_identity_group_is_unchanged() -> None:
    x = _batch()
    identity_only = randaugment_batch(x, 3, 10, torch.Generator().manual_seed(0), mean=MEAN, std=STD,
                                      space=OpSpace(ops=("identity",)))
    torch.testing.assert_close(identity_only, x, atol=1e-5, rtol=0)  # only the [0, 1] round trip
    unit = torch.rand(len(ALL_OPS) * 4, 3, 8, 8)
    op = torch.arange(len(ALL_OPS)).repeat(4)
    value = op_values(op, torch.full((len(op),), 0.8), torch.ones(len(op)), RANDAUGMENT_SPACE, 8, 8)
    out = apply_ops(unit, op, value, ALL_OPS)
    is_identity = op == ALL_OPS.index("identity")
    assert torch.equal(out[is_identity], unit[is_identity])  # bit-exact: the group is never touched
    assert ((out - unit).abs().flatten(1).amax(1)[~is_identity] > 0).all()  # every other op acts


def test_severity_scales_the_change() -> None:
    x = _batch(b=256)
    mild = randaugment_batch(x, 1, 1, torch.Generator().manual_seed(0), mean=MEAN, std=STD)
    strong = randaugment_batch(x, 1, 10, torch.Generator().manual_seed(0), mean=MEAN, std=STD)
    assert (strong - x).abs().mean() > 2 * (mild - x).abs().mean()


def test_geometric_ops_match_exact_references() -> None:
    unit = torch.rand(2, 3, 8, 8)
    ops = ("rotate", "translate_x", "translate_y")
    # rotate +90° (counter-clockwise, torchvision's convention) on a square image
    rotated = warp(unit, affine_theta(torch.tensor([0, 0]), torch.tensor([90.0, 90.0]), 8, 8, ops))
    torch.testing.assert_close(rotated, torch.rot90(unit, 1, dims=(2, 3)))
    # translate by +2 pixels: content moves right/down, black fill
    theta = affine_theta(torch.tensor([1, 2]), torch.tensor([2.0, 2.0]), 8, 8, ops)
    shifted = warp(unit, theta)
    torch.testing.assert_close(shifted[0, :, :, 2:], unit[0, :, :, :-2])
    assert (shifted[0, :, :, :2] == 0).all()
    torch.testing.assert_close(shifted[1, :, 2:, :], unit[1, :, :-2, :])


def test_colour_ops_match_their_definitions() -> None:
    levels = torch.arange(256, dtype=torch.float32).reshape(1, 1, 16, 16) / 255
    torch.testing.assert_close(solarize(levels, torch.tensor([0.5])),
                               torch.where(levels >= 0.5, 1 - levels, levels))
    four_bits = posterize(levels, torch.tensor([4.0]))
    assert four_bits.unique().numel() == 16
    dim = 0.2 + 0.3 * levels
    torch.testing.assert_close(autocontrast(dim), levels, atol=1e-6, rtol=0)  # stretched back to [0, 1]
    skewed = (levels**4 * 255).round() / 255  # mostly dark
    eq = equalize(skewed)
    assert eq.max() == 1 and eq.min() == 0 and eq.median() > skewed.median()


def test_vectorised_batch_is_fast(python_calls) -> None:
    """One batch is a fixed number of tensor operations, whatever its size (counted, not timed: a loop over its
    images would make 64x the calls for 64x the images)."""
    def calls(b: int) -> int:
        x = _batch(b=b, side=32)
        return python_calls(lambda: randaugment_batch(x, 1, 9, torch.Generator().manual_seed(0), mean=MEAN, std=STD))

    assert calls(2048) <= 2 * calls(32)


def test_hook_uses_the_dataset_statistics() -> None:
    state = SimpleNamespace(x=_batch(b=8, c=1), data=SimpleNamespace(mean=MEAN[:1], std=STD[:1]))
    before = state.x
    get_algorithm("randaugment")(depth=2).apply(Event.AFTER_DATALOADER, state)
    assert state.x.shape == before.shape and not torch.equal(state.x, before)


def test_parameter_bounds() -> None:
    with pytest.raises(ConfigError, match="depth"):
        get_algorithm("randaugment")(depth=6)
    with pytest.raises(ConfigError, match="severity"):
        get_algorithm("randaugment")(severity=11)


def test_short_training_run(tiny_recipe) -> None:
    result = fit(tiny_recipe({"randaugment": {}}, batch_size=32, max_duration=2))
    assert math.isfinite(result.loss) and result.accuracy > 0.3
