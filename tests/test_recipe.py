"""Recipe files: validation names the field (and line), dump/load round-trips, ids are stable."""
from __future__ import annotations

from pathlib import Path

import pytest

from recipesearch.errors import ConfigError
from recipesearch.recipe import dump_recipe, load_recipe, loads_recipe, recipe_id

ROOT = Path(__file__).resolve().parents[1]
GOOD = """\
model: {name: resnet8}
data: {name: digits}
optimizer: {name: sgd, lr: 0.1}
max_duration: 4
algorithms:
  label_smoothing: {smoothing: 0.1}
"""


@pytest.mark.parametrize("path", sorted((ROOT / "recipes").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_recipes_load_and_round_trip(path):
    recipe = load_recipe(path)
    again = loads_recipe(dump_recipe(recipe))
    assert again == recipe
    assert recipe_id(again) == recipe_id(recipe)


def test_round_trip_is_identical_and_id_stable():
    r = loads_recipe(GOOD)
    text = dump_recipe(r)
    r2 = loads_recipe(text)
    assert r2 == r and dump_recipe(r2) == text
    assert r.id() == r2.id() and len(r.id()) == 12


def test_id_ignores_name_but_not_content():
    r = loads_recipe(GOOD)
    assert r.with_overrides({"name": "other"}).id() == r.id()
    assert r.with_overrides({"optimizer.lr": 0.2}).id() != r.id()


def test_header_becomes_comments():
    text = dump_recipe(loads_recipe(GOOD), header="trial 3\naccuracy 0.97")
    assert text.startswith("# trial 3\n# accuracy 0.97\n")
    assert loads_recipe(text) == loads_recipe(GOOD)


def test_budget_dilates_epochs():
    assert loads_recipe(GOOD).with_overrides({"budget": 0.5}).epochs == 2


@pytest.mark.parametrize(
    ("text", "field", "line"),
    [
        (GOOD.replace("lr: 0.1", "lr: -1"), "optimizer.lr", 3),
        (GOOD.replace("lr: 0.1", "lr: fast"), "optimizer.lr", 3),
        (GOOD.replace("max_duration: 4", "max_duration: 0"), "max_duration", 4),
        (GOOD + "budget: 0\n", "budget", 7),
        (GOOD + "colour: red\n", "colour", 7),
        (GOOD.replace("resnet8", "resnet9000"), "model.name", 1),
        (GOOD.replace("name: digits", "name: mnist9"), "data.name", 2),
        (GOOD.replace("label_smoothing", "warp_drive"), "algorithms.warp_drive", 6),
        (GOOD.replace("smoothing: 0.1", "smoothing: 2"), "algorithms.label_smoothing.smoothing", 6),
        (GOOD.replace("smoothing: 0.1", "strength: 1"), "algorithms.label_smoothing.strength", 6),
        (GOOD.replace("name: sgd", "name: lion"), "optimizer.name", 3),
        (GOOD + "precision: fp8\n", "precision", 7),
    ],
)
def test_bad_fields_are_named_with_their_line(text, field, line):
    with pytest.raises(ConfigError) as info:
        loads_recipe(text, source="r.yaml")
    err = info.value
    assert err.field == field
    assert err.line == line
    message = str(err)
    assert "\n" not in message and message.startswith(f"r.yaml:{line}: {field}")


def test_forbidden_pair_is_refused():
    text = GOOD.replace("label_smoothing: {smoothing: 0.1}", "ema: {}\n  swa: {}")
    with pytest.raises(ConfigError, match="cannot be combined"):
        loads_recipe(text)


def test_missing_file_and_bad_yaml():
    with pytest.raises(ConfigError, match="file not found"):
        load_recipe("/nonexistent/recipe.yaml")
    with pytest.raises(ConfigError, match="invalid YAML") as info:
        loads_recipe("model: {name: [\n", source="x.yaml")
    assert "\n" not in str(info.value)


def test_algorithm_list_shorthand():
    r = loads_recipe(GOOD.replace("label_smoothing: {smoothing: 0.1}", "label_smoothing:"))
    assert r.algorithms == {"label_smoothing": {}}


def test_switching_model_drops_the_old_models_options():
    # A cnn's ``width: 32`` is a 32x width multiplier to a ResNet: carrying it over would build a giant.
    r = loads_recipe(GOOD.replace("{name: resnet8}", "{name: cnn, width: 32}"))
    assert r.with_overrides({"model.name": "resnet8"}).model.kwargs == {}
    switched = r.with_overrides({"model.name": "resnet8", "model.zero_init_residual": False})
    assert switched.model.kwargs == {"zero_init_residual": False}
    assert r.with_overrides({"model.name": "cnn"}).model.kwargs == {"width": 32}  # same model: kept
    assert r.with_overrides({"model.width": 16}).model.kwargs == {"width": 16}
