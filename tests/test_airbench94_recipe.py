"""recipes/cifar10_airbench94.yaml and its space: they load, the recipe holds the record's settings, the space
switches every record method, and a narrow version of the recipe trains end to end on CIFAR-10 files in the real
format (random pixels: this checks the mechanics, not the accuracy; CIFAR-10 cannot be downloaded here)."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from recipesearch.algorithms.flip_tta import FlipTTAModel
from recipesearch.data import clear_cache
from recipesearch.data.testing import write_cifar_python
from recipesearch.recipe import load_recipe
from recipesearch.space import load_space
from recipesearch.train.loop import Trainer

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "recipes" / "cifar10_airbench94.yaml"
SPACE = ROOT / "search_spaces" / "cifar10_airbench94.yaml"
RECORD_METHODS = {"patch_whitening", "bn_bias_lr", "label_smoothing", "lookahead", "alternating_flip", "translate",
                  "flip_tta"}


def test_the_recipe_holds_the_records_settings():
    recipe = load_recipe(RECIPE)
    assert recipe.model.name == "airbench94" and recipe.data.name == "cifar10"
    assert (recipe.batch_size, recipe.max_duration, recipe.precision, recipe.device) == (1024, 9.9, "bf16", "auto")
    opt = recipe.optimizer
    assert (opt.name, opt.momentum, opt.nesterov) == ("sgd", 0.85, True)
    assert opt.lr == pytest.approx(11.5 / (1 + 1 / (1 - 0.85)))  # the record's lr for a summed loss, per example
    assert opt.weight_decay == pytest.approx(0.0153 / (1 + 1 / (1 - 0.85)) / (1 - 0.85), rel=0.01)
    assert set(recipe.algorithms) == RECORD_METHODS | {"channels_last"}
    assert recipe.algorithms["label_smoothing"] == {"smoothing": 0.2}
    assert recipe.algorithms["translate"]["pixels"] == 2 and recipe.algorithms["flip_tta"] == {"translate": 1}
    assert recipe.algorithms["lookahead"]["alpha"] == pytest.approx(1 - 0.95**5, abs=1e-4)


def test_the_space_searches_around_it():
    space = load_space(SPACE)
    switched = {name for name, alg in space.algorithms.items() if not alg.always}
    assert switched >= RECORD_METHODS  # each record method on and off
    names = {p.name for p in space.params}
    assert {"optimizer.lr", "batch_size", "flip_tta.translate", "label_smoothing.smoothing"} <= names
    assert space.budgets == [0.5, 0.75, 1, 1.5] and space.base.id() == load_recipe(RECIPE).id()


@pytest.fixture
def cifar_files(tmp_path, monkeypatch):
    monkeypatch.delenv("RECIPESEARCH_DATA", raising=False)
    write_cifar_python(tmp_path / "cifar10", per_batch=48)  # 240 train and 48 test images, 32 x 32 x 3
    yield tmp_path / "cifar10"
    clear_cache()


def test_a_narrow_version_trains_on_cifar_shaped_files(cifar_files):
    recipe = load_recipe(RECIPE).with_overrides({
        "data.root": str(cifar_files), "model.widths": [8, 16, 16], "batch_size": 32, "max_duration": 3,
        "device": "cpu", "threads": 1, "eval_batch_size": 64})
    trainer = Trainer(recipe)
    result = trainer.fit()
    state, loader = trainer.state, trainer.state.train_loader
    assert math.isfinite(result.loss) and result.steps == 3 * (216 // 32)  # 24 of the 240 held out for validation
    assert result.val_accuracy is not None
    stem = state.model.stem[0]
    assert not stem.weight.requires_grad and stem.weight.shape == (24, 3, 2, 2)  # whitened and frozen
    assert state.extra["patch_whitening_filters"] == 24
    assert (loader.crop_padding, loader.padding_mode) == (2, "reflect") and loader.first_epoch_flips is not None
    assert isinstance(state.eval_model, FlipTTAModel) and state.eval_model.translate == 1
    assert state.model.blocks[0].conv1.weight.is_contiguous(memory_format=torch.channels_last)
