"""The Python API checks its arguments at the door (issue 32, item 8): a wrong type is a TypeError naming the
argument, an unusable value a UserError, before anything is loaded, trained, created or deleted."""
from __future__ import annotations

from pathlib import Path

import pytest

import recipesearch
from recipesearch.errors import UserError

ROOT = Path(__file__).resolve().parents[1]
TINY = (Path(__file__).parent / "tiny_recipe.yaml").read_text()
SPACE = ROOT / "search_spaces" / "digits.yaml"


@pytest.fixture
def tiny_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return path


# -- fit


@pytest.mark.parametrize(("value", "kind"), [(None, "NoneType"), (3, "int"), (b"tiny.yaml", "bytes"),
                                             (["tiny.yaml"], "list")])
def test_fit_refuses_what_is_not_a_recipe(value, kind):
    with pytest.raises(TypeError, match=rf"^recipe: a Recipe \(recipesearch.load_recipe\(path\)\) or the path of a "
                                        rf"recipe YAML file, not {kind}$"):
        recipesearch.fit(value)


def test_fit_points_a_mapping_to_recipe_from_dict():
    with pytest.raises(TypeError, match=r"^recipe: .*not dict \(a mapping: recipesearch.recipe.recipe_from_dict"):
        recipesearch.fit({"model": {"name": "cnn"}})


def test_fit_trains_a_recipe_file_given_by_path(tiny_file):
    result = recipesearch.fit(str(tiny_file))
    assert result.steps > 0 and 0.0 <= result.accuracy <= 1.0
    assert result.recipe_id == recipesearch.load_recipe(tiny_file).id()


def test_fit_takes_a_pathlib_path_and_passes_keywords_on(tiny_file, monkeypatch):
    import recipesearch.train.loop as loop

    seen = {}
    monkeypatch.setattr(loop, "fit", lambda recipe, **kwargs: seen.update(recipe=recipe, **kwargs) or "trained")
    assert recipesearch.fit(tiny_file, rungs=(0.5,)) == "trained"
    assert seen["recipe"] == recipesearch.load_recipe(tiny_file) and seen["rungs"] == (0.5,)


def test_fit_of_a_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="file not found"):
        recipesearch.fit(tmp_path / "nope.yaml")


def test_fit_refuses_data_that_is_not_a_bundle(tiny_file):
    recipe = recipesearch.load_recipe(tiny_file)
    with pytest.raises(TypeError, match=r"^data: a DataBundle \(recipesearch.data.load_data\) or None, not str$"):
        recipesearch.fit(recipe, data="digits")


# -- load_recipe


@pytest.mark.parametrize("value", [None, 3, b"tiny.yaml", {"model": {"name": "cnn"}}])
def test_load_recipe_refuses_what_is_not_a_path(value):
    with pytest.raises(TypeError, match=rf"^path: the path of a recipe YAML file \(str or os.PathLike\), "
                                        rf"not {type(value).__name__}$"):
        recipesearch.load_recipe(value)


def test_load_recipe_of_an_empty_path():
    with pytest.raises(UserError, match="^path: the path of a recipe YAML file is required, not an empty string$"):
        recipesearch.load_recipe("")


def test_load_recipe_takes_str_and_path(tiny_file):
    assert recipesearch.load_recipe(str(tiny_file)) == recipesearch.load_recipe(tiny_file)


# -- search


@pytest.fixture
def no_search(monkeypatch):
    """Past the door nothing may start: the driver and the space loader refuse."""
    import recipesearch.engine.driver as driver
    import recipesearch.space as space_pkg

    def refuse(*args, **kwargs):
        raise AssertionError("search went past its argument checks")

    monkeypatch.setattr(driver, "SearchDriver", refuse)
    monkeypatch.setattr(space_pkg, "load_space", refuse)


def test_search_without_out(no_search):
    with pytest.raises(TypeError, match="^out: a run directory path is required$"):
        recipesearch.search(SPACE, out=None)
    with pytest.raises(TypeError, match="out"):
        recipesearch.search(SPACE)  # type: ignore[call-arg]


def test_search_out_of_the_wrong_type_or_empty(no_search):
    with pytest.raises(TypeError, match=r"^out: a run directory path \(str or os.PathLike\) is required, not int$"):
        recipesearch.search(SPACE, out=3)
    for empty in ("", "  "):
        with pytest.raises(UserError, match="^out: a run directory path is required, not an empty string$"):
            recipesearch.search(SPACE, out=empty, force=True)  # never "." (the working directory), wiped


@pytest.mark.parametrize("space", [None, 3, ["digits.yaml"]])
def test_search_space_of_the_wrong_type(space, no_search, tmp_path):
    with pytest.raises(TypeError, match=r"^space: a search-space YAML path or a SearchSpace"):
        recipesearch.search(space, out=tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"force": "no"}, "^force: True or False, not str$"),
    ({"resume": 1}, "^resume: True or False, not int$"),
    ({"quiet": None}, "^quiet: True or False, not NoneType$"),
    ({"report": "yes"}, "^report: True or False, not str$"),
    ({"simplify": 1.0}, "^simplify: True or False, not float$"),
    ({"trials": "10"}, "^trials: an int or None, not str$"),
    ({"trials": True}, "^trials: an int or None, not bool$"),
    ({"concurrency": 2.0}, "^concurrency: an int or None, not float$"),
    ({"report_every": None}, "^report_every: an int, not NoneType$"),
    ({"executor": None}, '^executor: "ray" or "inprocess", not NoneType$'),
    ({"address": 6379}, "^address: a str or None, not int$"),
    ({"storage": Path("db.sqlite")}, "^storage: a str or None, not PosixPath$"),
    ({"scheduler": 1}, "^scheduler: a str or None, not int$"),
    ({"command": "recipesearch search"}, "^command: a list of str or None, not str$"),
])
def test_search_flags_of_the_wrong_type(kwargs, message, no_search, tmp_path):
    """A string where a flag goes is refused, not read as True: force="no" must not wipe a run directory."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "space.yaml").write_text("name: an earlier search\n")
    with pytest.raises(TypeError, match=message):
        recipesearch.search(SPACE, out=run, **kwargs)
    assert (run / "space.yaml").read_text() == "name: an earlier search\n"


def test_search_accepts_numpy_integers(monkeypatch, tmp_path):
    """Values of the right kind pass the door (numpy ints for counts too) and reach the driver."""
    import numpy as np

    import recipesearch.engine.driver as driver

    class Stop(Exception):
        pass

    def options_seen(space, options):
        assert options.trials == 8 and options.out == tmp_path / "run"
        raise Stop

    monkeypatch.setattr(driver, "SearchDriver", options_seen)
    with pytest.raises(Stop):
        recipesearch.search(str(SPACE), out=str(tmp_path / "run"), trials=np.int64(8), executor="inprocess",
                            quiet=True, report=False)
