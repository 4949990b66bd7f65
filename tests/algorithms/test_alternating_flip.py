"""Alternating flip (Jordan 2024, airbench94): every image is seen mirrored and unmirrored in any two consecutive
epochs (a random flip misses that for about half of them), epoch 0 mirrors a seeded random half, the trainer's
loader takes it at FIT_START and keeps it across a checkpoint; refused where a mirror changes the label."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from recipesearch.algorithms.alternating_flip import alternating_flip_batch, alternating_flip_mask, first_epoch_flips
from recipesearch.data import BatchLoader, DataSpec, load_data
from recipesearch.errors import ConfigError
from recipesearch.train import checkpoint
from recipesearch.train.loop import Trainer

N, SIDE = 48, 4


def _images() -> torch.Tensor:
    # no image equals its own mirror, so a batch says which of its images were flipped
    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (N, 1, SIDE, SIDE), generator=g, dtype=torch.uint8)
    assert not any(torch.equal(im, im.flip(-1)) for im in images)
    return images


def _orientations(loader: BatchLoader, images: torch.Tensor, epochs: int) -> torch.Tensor:
    """bool [epochs, N]: whether image k came out mirrored in each epoch (labels are the row indices)."""
    seen = torch.zeros(epochs, N, dtype=torch.bool)
    for epoch in range(epochs):
        count = 0
        for x, y in loader:
            pixels = (x * 255).round().to(torch.uint8)  # mean 0, std 1: x = image / 255
            for out, row in zip(pixels, y.tolist()):
                mirrored = torch.equal(out, images[row].flip(-1))
                assert mirrored or torch.equal(out, images[row])
                seen[epoch, row] = mirrored
                count += 1
        assert count == N
    return seen


def _loader(images: torch.Tensor, seed: int = 1) -> BatchLoader:
    return BatchLoader(images, torch.arange(N), 8, [0.0], [1.0], crop_padding=0,
                       generator=torch.Generator().manual_seed(seed))


def test_mask_alternates_from_the_first_epochs_half():
    flips = first_epoch_flips(1000, seed=3)
    assert torch.equal(flips, first_epoch_flips(1000, seed=3)) and not torch.equal(flips, first_epoch_flips(1000, 4))
    assert 400 < int(flips.sum()) < 600
    rows = torch.randperm(1000)[:64]
    for epoch in range(6):
        expected = flips[rows] if epoch % 2 == 0 else ~flips[rows]
        assert torch.equal(alternating_flip_mask(flips, rows, epoch), expected)
    x = torch.arange(3.0).view(1, 1, 1, 3).repeat(2, 1, 1, 1)
    out = alternating_flip_batch(x, torch.tensor([0, 1]), 1, torch.tensor([True, False]))
    assert torch.equal(out[0], x[0]) and torch.equal(out[1], x[1].flip(-1))


def test_every_image_is_seen_both_ways_in_consecutive_epochs():
    images = _images()
    loader = _loader(images)
    loader.first_epoch_flips = first_epoch_flips(N, seed=0)
    seen = _orientations(loader, images, epochs=5)
    assert torch.equal(seen[0], loader.first_epoch_flips)  # epoch 0: the seeded random half
    assert bool((seen[1:] != seen[:-1]).all())  # each epoch mirrors exactly the images the last one did not
    # The random flip it replaces: with a coin per image and epoch, about half of the images keep their
    # orientation from one epoch to the next (here 94 of 192 pairs; the chance of none at all is 2^-192).
    random_flip = _orientations(_loader(images), images, epochs=5)
    assert bool((random_flip[1:] == random_flip[:-1]).any())


def _flippable_digits():
    # Digits declared flip-invariant: lets a digits run test the mechanics that digits itself refuses.
    return dataclasses.replace(load_data(DataSpec(name="digits")), hflip=True)


def test_the_trainers_loader_takes_it_at_fit_start(tiny_recipe):
    data = _flippable_digits()
    trainer = Trainer(tiny_recipe({"alternating_flip": {}}, max_duration=0.1, seed=5), data=data)
    assert trainer.state.train_loader.first_epoch_flips is None  # the loader is built after INIT
    trainer.fit()
    flips = trainer.state.train_loader.first_epoch_flips
    assert torch.equal(flips, first_epoch_flips(len(data.train), seed=5))
    plain = Trainer(tiny_recipe(max_duration=0.1, seed=5), data=data)
    plain.fit()
    assert plain.state.train_loader.first_epoch_flips is None
    assert any(not torch.equal(a, b) for a, b in zip(trainer.state.model.state_dict().values(),
                                                     plain.state.model.state_dict().values()))


def test_refused_where_a_flip_changes_the_label_or_augmentation_is_off(tiny_recipe):
    with pytest.raises(ConfigError) as info:
        Trainer(tiny_recipe({"alternating_flip": {}}))
    assert info.value.field == "algorithms.alternating_flip" and "digits" in str(info.value)
    with pytest.raises(ConfigError, match="data.augment is false"):
        Trainer(tiny_recipe({"alternating_flip": {}}, data={"augment": False}), data=_flippable_digits())
    Trainer(tiny_recipe({"alternating_flip": {"force": True}}))  # the explicit override builds


class Crash(Exception):
    pass


def test_a_resumed_run_flips_as_the_uncut_one(tiny_recipe, tmp_path):
    # Crash in the middle of epoch 1 (an odd epoch: the complement of epoch 0's flips): the fresh trainer's
    # loader is built from the recipe and FIT_START does not fire again, so the settings come from the checkpoint.
    data = _flippable_digits()
    recipe = tiny_recipe({"alternating_flip": {}, "translate": {}}, max_duration=2, batch_size=64)
    steps_per_epoch = len(data.train) // 64
    whole = Trainer(recipe, data=data)
    expected = whole.fit()

    def crash(path, info):
        if info["step"] >= steps_per_epoch + 5:
            raise Crash(path)

    first = Trainer(recipe, data=data, checkpoint_every=0.0, checkpoint_dir=tmp_path, on_checkpoint=crash)
    with pytest.raises(Crash):
        first.fit()
    saved = torch.load(tmp_path / checkpoint.FILENAME, weights_only=False)["loader"]
    assert saved["epoch"] == 1 and saved["augmentation"]["padding_mode"] == "reflect"
    resumed = Trainer(recipe, data=data, resume_from=tmp_path)
    got = resumed.fit()
    assert (got.accuracy, got.loss, got.steps) == (expected.accuracy, expected.loss, expected.steps)
    for a, b in zip(whole.state.model.state_dict().values(), resumed.state.model.state_dict().values()):
        assert torch.equal(a, b)
