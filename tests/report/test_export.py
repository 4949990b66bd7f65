"""pareto.csv and recipes/<id>.yaml: the frontier exactly, as replayable recipes with provenance."""
from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from recipesearch.errors import UserError
from recipesearch.recipe import load_recipe, recipe_from_dict
from recipesearch.report import build_report, export_recipes
from recipesearch.report.export import PARETO_COLUMNS

from .fake_run import SPACE_HASH, SPACE_NAME, trials_frame
from .test_info import completed_points, non_dominated


def test_pareto_csv_is_the_non_dominated_set(built_run):
    pareto = pd.read_csv(built_run / "pareto.csv")
    trials = pd.read_csv(built_run / "trials.csv").set_index("number")
    assert set(pareto["number"]) == non_dominated(completed_points(trials.reset_index()))
    assert list(pareto.columns[: len(PARETO_COLUMNS)]) == PARETO_COLUMNS
    assert {"params_optimizer.lr", "params_label_smoothing.smoothing"} <= set(pareto.columns)
    for row in pareto.itertuples():
        assert row.accuracy == trials.loc[row.number, "accuracy"]
        assert row.train_seconds == trials.loc[row.number, "train_seconds"]
        assert row.recipe_id == trials.loc[row.number, "recipe_id"]
    assert pareto.set_index("number").loc[4, "speedup"] == pytest.approx(2.0)


def test_recipes_are_replayable_with_provenance(built_run):
    pareto = pd.read_csv(built_run / "pareto.csv")
    trials = pd.read_csv(built_run / "trials.csv").set_index("number")
    files = sorted((built_run / "recipes").glob("*.yaml"))
    assert {f.stem for f in files} == set(pareto["recipe_id"])
    for path in files:
        recipe = load_recipe(path)
        assert recipe.id() == path.stem
        text = path.read_text()
        number = int(pareto.set_index("recipe_id").loc[path.stem, "number"])
        assert text.startswith(f"# recipesearch frontier recipe {path.stem}\n")
        assert f"# trial {number} of search space '{SPACE_NAME}' (space hash {SPACE_HASH})" in text
        assert f"accuracy {trials.loc[number, 'accuracy']:.4f}" in text
        assert f"train_seconds {trials.loc[number, 'train_seconds']:.2f}" in text
        assert re.search(r"^# run: /\S+/run$", text, re.M)  # the absolute run dir it was built in
        assert recipe.to_dict() == recipe_from_dict(json.loads(trials.loc[number, "recipe_json"])).to_dict()


def test_rebuild_removes_recipes_that_left_the_frontier_only(built_run):
    stale = built_run / "recipes" / "000000000000.yaml"
    stale.write_text("# recipesearch frontier recipe 000000000000\nmax_duration: 1\n")
    mine = built_run / "recipes" / "my_notes.yaml"
    mine.write_text("# not written by the report\n")
    build_report(built_run)
    assert not stale.exists() and mine.exists()
    assert not list(built_run.rglob(".*.tmp"))  # atomic writes leave no temporary files


def test_export_copies_and_refuses_to_overwrite_different_files(run_dir, tmp_path):
    out = tmp_path / "out"
    paths = export_recipes(run_dir, out)
    assert paths and all(p.parent == out and p.is_file() for p in paths)
    assert export_recipes(run_dir, out) == paths  # identical files: nothing to refuse
    paths[0].write_text("edited by hand\n")
    before = {p: p.read_text() for p in paths}
    with pytest.raises(UserError, match="--force"):
        export_recipes(run_dir, out)
    assert {p: p.read_text() for p in paths} == before  # a refused export writes nothing
    export_recipes(run_dir, out, force=True)
    assert load_recipe(paths[0]).id() == paths[0].stem


def test_export_of_a_run_without_completed_trials_is_an_error(tmp_path):
    from .fake_run import write_run_dir

    run = write_run_dir(tmp_path / "run", trials_frame().assign(state="FAIL"))
    with pytest.raises(UserError, match="nothing to export"):
        export_recipes(run, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_an_exported_recipe_trains(built_run, capsys):
    """`recipesearch train recipes/<id>.yaml` runs a frontier recipe as is (the fastest one: ~1 s)."""
    from recipesearch.cli import main

    fastest = pd.read_csv(built_run / "pareto.csv").iloc[0]
    path = built_run / fastest["recipe_file"]
    assert main(["train", str(path), "--quiet", "--out", str(built_run / "replay")]) == 0
    result = json.loads((built_run / "replay" / "result.json").read_text())
    assert result["recipe_id"] == fastest["recipe_id"]
