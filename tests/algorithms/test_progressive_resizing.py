"""Progressive resizing: image size follows the schedule on training progress, so budgets dilate it."""
from __future__ import annotations

import math

import pytest
import torch

from recipesearch.algorithms import get_algorithm
from recipesearch.algorithms.progressive_resizing import resize_batch, scale_at, scaled_size
from recipesearch.errors import ConfigError
from recipesearch.train.loop import Trainer


@pytest.mark.parametrize(("progress", "scale"), [(0.0, 0.5), (0.2, 0.5), (0.4, 0.5), (0.6, 0.75),
                                                 (0.7, 0.875), (0.8, 1.0), (0.99, 1.0)])
def test_schedule_holds_ramps_and_finetunes(progress: float, scale: float) -> None:
    assert scale_at(progress, 0.5, 0.4, 0.2) == pytest.approx(scale)


def test_sizes_are_rounded_to_the_increment() -> None:
    assert scaled_size(32, 0.5, 4) == 16
    assert scaled_size(32, 0.6, 4) == 20  # 19.2 -> 20
    assert scaled_size(32, 0.55, 4) == 16  # 17.6 -> 16
    assert scaled_size(16, 0.1, 4) == 4  # never below one increment
    assert scaled_size(30, 1.0, 4) == 30  # full size is never rounded


def test_resize_mode_interpolates_the_whole_image() -> None:
    x = torch.arange(16.0).reshape(1, 1, 4, 4).repeat(2, 3, 1, 1)
    y = torch.tensor([1, 2])
    small, y_out = resize_batch(x, y, 0.5, "resize")
    assert small.shape == (2, 3, 2, 2) and y_out is y
    # antialiased: every output pixel averages a neighbourhood, so the image's content is kept, smoothed
    assert small[0, 0, 0, 0] < small[0, 0, 0, 1] < small[0, 0, 1, 1]
    assert abs(small.mean().item() - x.mean().item()) < 0.5
    flat, _ = resize_batch(torch.full((1, 1, 16, 16), 3.0), y, 0.25, "resize")
    torch.testing.assert_close(flat, torch.full((1, 1, 4, 4), 3.0))


def test_crop_mode_takes_a_window() -> None:
    x = torch.randn(4, 3, 16, 16)
    small, _ = resize_batch(x, torch.zeros(4), 0.5, "crop", generator=torch.Generator().manual_seed(0))
    assert small.shape == (4, 3, 8, 8)
    windows = x.unfold(2, 8, 1).unfold(3, 8, 1)  # [B, C, 9, 9, 8, 8]: every 8x8 window
    match = (windows == small[:, :, None, None]).flatten(4).all(-1).all(1).all(0)
    assert match.any()  # one window, the same for the whole batch


def _training_sizes(recipe) -> list[tuple[float, int]]:
    """(progress, image side) of every training forward pass."""
    trainer = Trainer(recipe)
    seen: list[tuple[float, int]] = []
    s = trainer.state

    def record(module, args):
        if module.training:
            seen.append((s.step / s.total_steps, args[0].shape[-1]))

    s.model.register_forward_pre_hook(record)
    trainer.train()
    return seen


def test_training_follows_the_schedule_and_budget_dilates_it(tiny_recipe) -> None:
    full = 16  # digits' default size
    by_budget = {}
    for budget in (1.0, 0.5):
        seen = _training_sizes(tiny_recipe({"progressive_resizing": {}}, batch_size=32, max_duration=2,
                                           budget=budget))
        for progress, side in seen:
            assert side == scaled_size(full, scale_at(progress, 0.5, 0.4, 0.2), 4)
        sides = [side for _, side in seen]
        assert sides[0] == 8 and sides[-1] == 16 and 12 in sides  # start, mid-ramp, end
        by_budget[budget] = sides
    # same schedule in progress, half the steps: the switch to full size comes at half the step count
    first_full = {b: sides.index(16) for b, sides in by_budget.items()}
    assert len(by_budget[0.5]) == len(by_budget[1.0]) // 2
    assert abs(first_full[0.5] - first_full[1.0] / 2) <= 1


def test_fractions_must_fit() -> None:
    with pytest.raises(ConfigError, match="delay_fraction"):
        get_algorithm("progressive_resizing")(delay_fraction=0.9, finetune_fraction=0.2)


def test_short_training_run(tiny_recipe) -> None:
    from recipesearch.train.loop import fit

    result = fit(tiny_recipe({"progressive_resizing": {}}, batch_size=32, max_duration=2))
    assert math.isfinite(result.loss) and result.accuracy > 0.3
