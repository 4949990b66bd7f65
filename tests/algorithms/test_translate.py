"""Translate (Jordan 2024, airbench94): each image shifted by up to N px with the uncovered border reflected, every
shift drawn; it replaces the trainer's zero-padded crop from FIT_START on, whatever data.crop_padding says."""
from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from recipesearch.algorithms.translate import random_translate
from recipesearch.data import BatchLoader, DataSpec, load_data
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.train.loop import Trainer


def _shifts(image: torch.Tensor, out: torch.Tensor, pixels: int, mode: str) -> list[tuple[int, int]]:
    """Slow reference: every (dy, dx) whose window of the padded image is ``out``."""
    h, w = image.shape[-2:]
    padded = F.pad(image[None].float(), (pixels,) * 4, mode="reflect" if mode == "reflect" else "constant")[0]
    return [(dy, dx) for dy in range(2 * pixels + 1) for dx in range(2 * pixels + 1)
            if torch.equal(padded[:, dy : dy + h, dx : dx + w], out.float())]


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_each_image_is_a_shifted_window_of_its_reflected_padding(dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randint(1, 256, (300, 3, 6, 5), generator=g).to(dtype)  # no zeros: zero padding would show
    out = random_translate(x, 2, torch.Generator().manual_seed(1))
    assert out.shape == x.shape and out.dtype == dtype
    shifts = set()
    for k in range(len(x)):
        found = _shifts(x[k], out[k], 2, "reflect")
        assert len(found) == 1, k
        shifts.add(found[0])
    assert shifts == {(dy, dx) for dy in range(5) for dx in range(5)}  # every shift up to 2 px each way
    assert bool((out != 0).all())  # reflection shows the image, never a black border
    zeros = random_translate(x, 2, torch.Generator().manual_seed(1), padding_mode="zeros")
    assert bool((zeros == 0).any())  # the usual crop: the same windows of a zero-padded image


def test_reflection_needs_an_image_larger_than_the_shift():
    with pytest.raises(ValueError, match="reflect"):
        random_translate(torch.rand(2, 1, 3, 3), 3)


def test_it_replaces_the_trainers_crop_at_fit_start(tiny_recipe):
    data = load_data(DataSpec(name="digits"))
    recipe = tiny_recipe({"translate": {"pixels": 3}}, data={"crop_padding": 5}, max_duration=0.1)
    trainer = Trainer(recipe)
    loader = trainer.state.train_loader
    assert (loader.crop_padding, loader.padding_mode) == (5, "zeros")  # the recipe's, until FIT_START
    trainer.fit()
    assert (loader.crop_padding, loader.padding_mode) == (3, "reflect")
    # the batches it trains on: no black border, where the recipe's zero-padded crop of 5 px has some
    seen = []
    trainer = Trainer(recipe, data=dataclasses.replace(data, train=_no_black(data.train)))
    trainer.set_algorithms(trainer.algorithms + [_Record(seen)])
    trainer.fit()
    black = (torch.tensor(0.0) - torch.tensor(data.mean)) / torch.tensor(data.std)  # pixel 0, normalised
    assert seen and not any(bool(torch.isclose(x, black).any()) for x in seen)


def _no_black(split):
    return dataclasses.replace(split, images=split.images.clamp_min(1))


class _Record:
    """A stand-in hook that keeps each training batch (after the loader, before any method changes it)."""

    name, events, order = "record", frozenset({Event.AFTER_DATALOADER}), 0

    def __init__(self, seen: list):
        self.seen = seen

    def match(self, event, state):
        return event in self.events

    def apply(self, event, state):
        self.seen.append(state.x.clone())


def test_refusals(tiny_recipe):
    with pytest.raises(ConfigError, match="data.augment is false"):
        Trainer(tiny_recipe({"translate": {}}, data={"augment": False}))
    with pytest.raises(ConfigError) as info:
        Trainer(tiny_recipe({"translate": {"pixels": 16}}))  # digits are 16 px
    assert info.value.field == "algorithms.translate.pixels"
    Trainer(tiny_recipe({"translate": {"pixels": 16, "padding_mode": "zeros"}}))  # zero padding takes any size


def test_loader_crop_modes_use_one_generator_stream():
    # The loader's reflect crop draws exactly what its zero-padded crop draws: same windows, other borders.
    images = torch.randint(1, 256, (16, 1, 6, 6), dtype=torch.uint8)
    batches = {}
    for mode in ("zeros", "reflect"):
        loader = BatchLoader(images, torch.arange(16), 16, [0.0], [1.0], crop_padding=2, hflip=False,
                             generator=torch.Generator().manual_seed(0))
        loader.padding_mode = mode
        batches[mode] = next(iter(loader))
    assert torch.equal(batches["zeros"][1], batches["reflect"][1])
    zero_x, reflect_x = batches["zeros"][0], batches["reflect"][0]
    inside = zero_x != 0
    assert torch.equal(zero_x[inside], reflect_x[inside]) and bool((reflect_x != 0).all())


def test_a_hand_written_loop_is_told_that_its_batches_are_its_own(tiny_recipe):
    import recipesearch
    from recipesearch.models import create_model

    recipe = tiny_recipe({"translate": {}, "alternating_flip": {"force": True}, "label_smoothing": {}})
    run = recipesearch.apply(recipe, create_model("cnn", 10, in_channels=1, image_size=16, width=8))
    (warning,) = [w for w in run.warnings if "own batch loader" in w]
    assert warning.startswith("alternating_flip, translate") and "translate_batch" in warning
