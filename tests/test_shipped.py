"""The shipped search spaces and recipes: inside the package, found by name, listed, and the top-level folders
of a clone are the same files."""
from __future__ import annotations

from pathlib import Path

import pytest

from recipesearch import shipped
from recipesearch.errors import UserError
from recipesearch.recipe import load_recipe
from recipesearch.space import load_space
from tests.conftest import call_cli

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("kind, top", [("space", "search_spaces"), ("recipe", "recipes")])
def test_the_top_level_folders_are_the_shipped_ones(kind, top):
    assert (ROOT / top).resolve() == shipped.FOLDERS[kind].resolve()
    assert shipped.FOLDERS[kind].is_relative_to(Path(shipped.__file__).parent)  # inside the package: a wheel has it
    assert "digits" in shipped.names("space") and "digits_baseline" in shipped.names("recipe")


def test_a_bare_name_loads_the_shipped_file_and_a_path_stays_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nowhere near the clone's folders
    assert load_space("digits").path.resolve() == (shipped.FOLDERS["space"] / "digits.yaml").resolve()
    assert load_recipe("digits_baseline").name == "digits-baseline"
    (tmp_path / "digits").mkdir()  # a folder of that name is the user's: its reader says what is wrong with it
    assert shipped.resolve("digits", "space") == "digits"
    with pytest.raises(UserError, match=r"^space: 'digitz' is neither a file nor a shipped space; shipped: .*digits"):
        load_space("digitz")


@pytest.mark.parametrize("command, kind", [("spaces", "space"), ("recipes", "recipe")])
def test_the_listing_names_every_shipped_file_with_a_line_from_it(capsys, command, kind):
    code, out, _ = call_cli(capsys, command)
    assert code == 0
    listed = [line.split()[0] for line in out.splitlines()[:len(shipped.names(kind))]]
    assert listed == shipped.names(kind)
    assert "Digits baseline: the embedded default" in out or "The embedded default" in out
    assert str(shipped.FOLDERS[kind]) in out


def test_an_unknown_name_is_one_line_and_exit_2(capsys, tmp_path):
    code, out, err = call_cli(capsys, "train", "no_such_recipe", "--out", str(tmp_path / "x"))
    assert code == 2 and err.count("\n") == 1
    assert "recipe: 'no_such_recipe' is neither a file nor a shipped recipe" in err
    assert not (tmp_path / "x").exists()
