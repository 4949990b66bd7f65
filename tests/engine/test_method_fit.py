"""engine/method_fit.py: a space's methods applied to its model before the first trial; and a model whose logits
do not match the data's classes refused before training (models/registry.py)."""
from __future__ import annotations

import pytest

import recipesearch
from recipesearch.engine.method_fit import check_methods_fit
from recipesearch.errors import ConfigError
from recipesearch.space import load_space
from tests.conftest import call_cli, make_recipe
from tests.engine.conftest import TINY_BASE


def test_methods_that_cannot_apply_are_named_and_nothing_is_written(tmp_path, write_space, capsys):
    # the tiny CNN has no residual blocks (stochastic depth), and no strided conv with that many input channels
    # (blurpool, told to leave max-pools alone): both refused with their reasons; label smoothing fits
    path = write_space(algorithms={"label_smoothing": {"smoothing": {"range": [0.05, 0.2]}},
                                   "stochastic_depth": {"drop_rate": {"range": [0.05, 0.2]}},
                                   "blurpool": {"min_channels": 1000, "replace_maxpools": False}})
    out = tmp_path / "run"
    code, _, err = call_cli(capsys, "search", str(path), "--out", str(out), "--executor", "inprocess", "--quiet")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "2 method(s) cannot apply to model cnn" in lines[0]
    assert "stochastic_depth (model cnn has no residual blocks" in lines[0] and "blurpool (model cnn" in lines[0]
    assert "label_smoothing" not in lines[0] and lines[0].startswith(f"error: {path}")
    assert not out.exists()


def test_a_space_whose_methods_fit_passes(write_space):
    space = load_space(write_space(base={**TINY_BASE, "model": {"name": "resnet8"}},
                                   algorithms={"stochastic_depth": {"drop_rate": {"range": [0.05, 0.2]}},
                                               "blurpool": {}, "label_smoothing": {}}))
    check_methods_fit(space)  # resnet8 has residual blocks and strided convs: nothing to refuse


def test_a_model_with_the_wrong_number_of_outputs_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "fivenet.py").write_text(
        "from torch import nn\n"
        "def five(num_classes, in_channels, image_size):\n"
        "    return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size * image_size, 5))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    recipe = make_recipe(model={"name": "fivenet:five"})
    with pytest.raises(ConfigError, match=r"model.name: fivenet:five: it returns a tensor of shape \[2, 5\], not "
                                          r"logits \[2, 10\] \(the data has 10 classes"):
        recipesearch.fit(recipe)


def test_a_base_recipe_that_cannot_start_is_refused_as_it_is(tmp_path, write_space, capsys, monkeypatch):
    # a model that cannot take the data (here: 1-channel digits) fails the baseline's own start-up: its error
    (tmp_path / "rgbnet.py").write_text(
        "from torch import nn\n"
        "def net(num_classes, in_channels, image_size):\n"
        "    if in_channels == 1:\n"
        "        raise ValueError('this net needs RGB images')\n"
        "    return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size ** 2, num_classes))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    path = write_space(base={**TINY_BASE, "model": {"name": "rgbnet:net"}})
    out = tmp_path / "run"
    code, _, err = call_cli(capsys, "search", str(path), "--out", str(out), "--executor", "inprocess", "--quiet")
    assert code == 2 and err.strip().splitlines() == [
        "error: model.name: rgbnet:net raised ValueError: this net needs RGB images (at rgbnet.py:4)"]
    assert not out.exists()
