"""``--set`` (``Recipe.with_overrides``, ``commands.train.parse_overrides``) with null, issue 32 item 7:
``algorithms.NAME=null`` removes the method (it used to reset it to its defaults), ``algorithms=null`` every
method; null elsewhere keeps its meaning; a removal that removes nothing is a warning line."""
from __future__ import annotations

import sys
import textwrap

import pytest

from recipesearch.cli import main
from recipesearch.commands.train import parse_overrides
from recipesearch.errors import ConfigError
from recipesearch.recipe import dotted_parts, loads_recipe

RECIPE = """\
model: {name: cnn, width: 8}
data: {name: digits}
max_duration: 1
device: cpu
threads: 1
algorithms:
  label_smoothing: {smoothing: 0.2}
  channels_last: {}
"""


@pytest.mark.parametrize("text", ["null", "~", "Null", "NULL", ""])
def test_null_arrives_as_none(text):
    assert parse_overrides([f"algorithms.label_smoothing={text}"]) == {"algorithms.label_smoothing": None}


def test_null_at_a_method_removes_it():
    recipe = loads_recipe(RECIPE)
    removed = recipe.with_overrides(parse_overrides(["algorithms.label_smoothing=null"]))
    assert removed.algorithms == {"channels_last": {}}
    assert recipe.override_warnings({"algorithms.label_smoothing": None}) == []


def test_an_empty_mapping_switches_a_method_on_with_its_defaults():
    recipe = loads_recipe(RECIPE).with_overrides(parse_overrides(["algorithms.mixup={}"]))
    assert recipe.algorithms["mixup"] == {}


def test_null_at_algorithms_removes_every_method():
    assert loads_recipe(RECIPE).with_overrides({"algorithms": None}).algorithms == {}


def test_null_elsewhere_keeps_its_meaning():
    recipe = loads_recipe(RECIPE.replace("data: {name: digits}", "data: {name: digits, hflip: true}"))
    assert recipe.with_overrides({"data.hflip": None}).data.hflip is None  # the dataset's own choice again
    with pytest.raises(ConfigError) as info:  # a hyperparameter is not a method: the method checks it
        recipe.with_overrides({"algorithms.label_smoothing.smoothing": None})
    assert info.value.field == "algorithms.label_smoothing.smoothing"


def test_removing_a_method_the_recipe_lacks_is_a_warning():
    recipe = loads_recipe(RECIPE)
    assert recipe.override_warnings({"algorithms.mixup": None}) == [
        "--set algorithms.mixup=null: the recipe has no mixup, nothing to remove (to switch it on with its "
        "defaults: --set algorithms.mixup={})"]
    assert recipe.with_overrides({"algorithms.mixup": None}).algorithms == recipe.algorithms


def test_removing_an_unknown_method_is_refused_as_in_a_recipe():
    with pytest.raises(ConfigError) as info:
        loads_recipe(RECIPE).with_overrides({"algorithms.label_smothing": None})
    assert info.value.field == "algorithms.label_smothing" and "unknown algorithm" in info.value.message
    assert str(info.value).startswith("--set: ")


def test_removing_and_setting_one_method_is_refused():
    with pytest.raises(ConfigError) as info:
        loads_recipe(RECIPE).with_overrides({"algorithms.label_smoothing": None,
                                             "algorithms.label_smoothing.smoothing": 0.1})
    assert info.value.field == "algorithms.label_smoothing.smoothing"
    assert "algorithms.label_smoothing=null removes label_smoothing" in info.value.message


def test_an_import_path_method_is_removed_whole(tmp_path, monkeypatch):
    """``algorithms.acme.tricks:Noise`` is one method (``dotted_parts``), removed by null as a named one."""
    package = tmp_path / "acme_set_null"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "tricks.py").write_text(textwrap.dedent("""
        from pydantic import BaseModel, ConfigDict

        from recipesearch.algorithms import Algorithm
        from recipesearch.hooks.events import Event


        class Params(BaseModel):
            model_config = ConfigDict(extra="forbid")
            std: float = 0.1


        class Noise(Algorithm):
            name, description, citation = "noise", "input noise", "-"
            events = frozenset({Event.AFTER_DATALOADER})
            Params = Params

            def apply(self, event, state):
                state.x = state.x + self.params.std
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        path = "acme_set_null.sub.tricks:Noise"
        assert dotted_parts(f"algorithms.{path}") == ["algorithms", path]
        recipe = loads_recipe(RECIPE).with_overrides({f"algorithms.{path}.std": 0.3})
        assert recipe.algorithms[path] == {"std": 0.3}
        assert path not in recipe.with_overrides({f"algorithms.{path}": None}).algorithms
    finally:
        for name in [m for m in sys.modules if m.startswith("acme_set_null")]:
            del sys.modules[name]


def test_train_removes_the_method_it_is_told_to(tmp_path, capsys):
    recipe, out = tmp_path / "r.yaml", tmp_path / "out"
    recipe.write_text(RECIPE)
    code = main(["train", str(recipe), "--set", "algorithms.label_smoothing=null", "--set", "algorithms.mixup=null",
                 "--set", "budget=0.05", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 0, err
    trained = loads_recipe((out / "recipe.yaml").read_text())
    assert trained.algorithms == {"channels_last": {}}
    warnings = [line for line in err.splitlines() if line.startswith("warning: --set")]
    assert warnings == ["warning: --set algorithms.mixup=null: the recipe has no mixup, nothing to remove (to switch "
                        "it on with its defaults: --set algorithms.mixup={})"]


def test_train_refuses_a_contradiction_in_one_line(tmp_path, capsys):
    recipe, out = tmp_path / "r.yaml", tmp_path / "out"
    recipe.write_text(RECIPE)
    code = main(["train", str(recipe), "--set", "algorithms.label_smoothing=null",
                 "--set", "algorithms.label_smoothing.smoothing=0.1", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: --set: algorithms.label_smoothing.smoothing: ")
    assert not out.exists()


def test_a_data_argument_in_the_model_section_is_one_line(tiny_recipe):
    # was a TypeError from create_model ("got multiple values for keyword argument 'image_size'")
    from recipesearch.errors import ConfigError

    recipe = tiny_recipe()
    with pytest.raises(ConfigError, match="model.image_size: is set from the data"):
        recipe.with_overrides({"model.image_size": 32})
