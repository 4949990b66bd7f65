"""Patch whitening: the filters whiten patches, the hook sets the first conv from train images, inside
train_seconds, and frozen it stays put. Measured on 2 shared CPU cores: ~15 s, most of it the digits run."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from recipesearch.algorithms import patch_whitening as pw
from recipesearch.algorithms.patch_whitening import (
    first_conv,
    patch_covariance,
    training_images,
    whitening_filters,
    whitening_matrix,
)
from recipesearch.data import normalize
from recipesearch.recipe import load_recipe, recipe_from_dict
from recipesearch.train.loop import Trainer

ROOT = Path(__file__).resolve().parents[2]


def correlated_images(n: int = 32, c: int = 3, size: int = 12, seed: int = 0) -> torch.Tensor:
    """Smooth random images: neighbouring pixels and channels are strongly correlated, as in photos."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, c, size + 2, size + 2, generator=gen)
    x = F.avg_pool2d(x, 3, stride=1)  # spatial correlation
    return x + 0.5 * x.mean(1, keepdim=True)  # channel correlation


def test_covariance_is_the_second_moment_of_every_valid_patch():
    x = torch.arange(2 * 2 * 3 * 3, dtype=torch.float32).reshape(2, 2, 3, 3) / 10
    patches = [x[b, :, i:i + 2, j:j + 2].reshape(-1) for b in range(2) for i in range(2) for j in range(2)]
    by_hand = sum(torch.outer(p, p) for p in patches).double() / len(patches)  # 8 patches of d = 2*2*2
    torch.testing.assert_close(patch_covariance(x, 2, chunk=1), by_hand)


def test_whitening_matrix_maps_the_covariance_to_identity():
    cov = patch_covariance(correlated_images(), 3)  # d = 27
    eigenvalues, w = whitening_matrix(cov, eps=1e-12)
    assert torch.all(eigenvalues[:-1] >= eigenvalues[1:])  # leading directions first
    torch.testing.assert_close(w @ cov @ w.T, torch.eye(27, dtype=torch.float64), atol=1e-6, rtol=0)
    # With airbench's eps each direction is scaled to lambda / (lambda + eps): ~1 where lambda >> eps.
    eigenvalues, w = whitening_matrix(cov, eps=5e-4)
    torch.testing.assert_close(w @ cov @ w.T, torch.diag(eigenvalues / (eigenvalues + 5e-4)), atol=1e-9, rtol=0)


def test_conv_with_the_filters_outputs_whitened_channels():
    # The real effect, through F.conv2d: filter layout (C, kh, kw) must match the patch flattening.
    images = correlated_images()
    filters = whitening_filters(images, 3, out_channels=27, eps=1e-9, paired=False)
    out = F.conv2d(images, filters).double()  # padding 0: exactly the patches the estimate saw
    flat = out.permute(1, 0, 2, 3).reshape(27, -1)
    torch.testing.assert_close(flat @ flat.T / flat.shape[1], torch.eye(27, dtype=torch.float64), atol=1e-4, rtol=0)
    assert torch.cov(F.conv2d(images, filters[:1]).reshape(1, -1)).item() > 0.99


def test_fewer_channels_keep_the_leading_directions_in_pairs():
    images = correlated_images(c=1)  # d = 9
    _, w = whitening_matrix(patch_covariance(images, 3))
    rows = w.float().reshape(9, 1, 3, 3)
    torch.testing.assert_close(whitening_filters(images, 3, 18), torch.cat((rows, -rows)))  # airbench's layout
    torch.testing.assert_close(whitening_filters(images, 3, 8), torch.cat((rows[:4], -rows[:4])))
    torch.testing.assert_close(whitening_filters(images, 3, 5), torch.cat((rows[:3], -rows[:2])))
    assert whitening_filters(images, 3, 40).shape[0] == 18  # the rest keep their initial weights
    torch.testing.assert_close(whitening_filters(images, 3, 4, paired=False), rows[:4])


def test_hook_whitens_the_first_conv_from_train_images_and_freezes_it(tiny_recipe):
    recipe = tiny_recipe({"patch_whitening": {}}, data={"name": "digits", "val_fraction": 0.2}, max_duration=0.5)
    trainer = Trainer(recipe)
    conv = first_conv(trainer.state.model)
    stride, padding, init = conv.stride, conv.padding, conv.weight.detach().clone()
    assert not conv.weight.requires_grad
    assert all(p is not conv.weight for g in trainer.state.optimizer.param_groups for p in g["params"])
    trainer.train()
    # Estimated from the train split only: the val split is a different set of images.
    bundle = trainer.data
    train_only = normalize(bundle.train.images, bundle.mean, bundle.std)
    expected = whitening_filters(train_only, 3, conv.out_channels)
    torch.testing.assert_close(conv.weight, expected)  # after the training steps: still exactly the filters
    assert not torch.equal(conv.weight, init)
    assert (conv.stride, conv.padding) == (stride, padding)
    assert training_images(trainer.state, 100).shape[0] == 100


def test_unfrozen_filters_train(tiny_recipe):
    trainer = Trainer(tiny_recipe({"patch_whitening": {"freeze": False}}, max_duration=0.5))
    trainer.train()
    conv = first_conv(trainer.state.model)
    bundle = trainer.data
    whitened = whitening_filters(normalize(bundle.train.images, bundle.mean, bundle.std), 3, conv.out_channels)
    assert conv.weight.requires_grad and not torch.allclose(conv.weight, whitened)


def test_estimate_counts_in_train_seconds(tiny_recipe, monkeypatch):
    original = pw.patch_covariance

    def slow(*args, **kwargs):
        time.sleep(0.3)
        return original(*args, **kwargs)

    monkeypatch.setattr(pw, "patch_covariance", slow)
    trainer = Trainer(tiny_recipe({"patch_whitening": {}}, max_duration=0.05))
    train_seconds, _ = trainer.train()
    assert trainer.state.extra["patch_whitening_seconds"] >= 0.3
    assert train_seconds >= 0.3


def test_digits_recipe_reaches_95_percent():
    # recipes/digits_baseline.yaml with the method on alone (one thread: ~10 s on a shared 2-core machine).
    data = load_recipe(ROOT / "recipes" / "digits_baseline.yaml").to_dict()
    data.update(algorithms={"patch_whitening": {}}, threads=1, device="cpu")
    trainer = Trainer(recipe_from_dict(data))
    result = trainer.fit()
    assert result.accuracy >= 0.95
    assert 0 < trainer.state.extra["patch_whitening_seconds"] < result.train_seconds


def test_refuses_a_model_whose_first_conv_does_not_read_the_images(tiny_recipe, monkeypatch):
    from recipesearch.errors import ConfigError

    monkeypatch.setattr(pw, "first_conv", lambda model: torch.nn.Conv2d(3, 8, 3))  # digits has 1 channel
    with pytest.raises(ConfigError, match="algorithms.patch_whitening"):
        Trainer(tiny_recipe({"patch_whitening": {}}))
