"""pareto.csv and recipes/<id>.yaml: the frontier exactly, as replayable recipes with provenance."""
from __future__ import annotations

import json
import math
import re

import pandas as pd
import pytest

from recipesearch.errors import UserError
from recipesearch.recipe import load_recipe, recipe_from_dict
from recipesearch.report import build_report, export_recipes, load_run
from recipesearch.report.export import pareto_columns

from .fake_run import CONFIRMED_NUMBER, CURVE_SPEEDUP, SPACE_HASH, SPACE_NAME, trials_frame
from .test_info import ACC_HALF, T_975_2, completed_points, non_dominated

# issue 13; every accuracy named by its split (issue 31): fake_run selects on test, so its metric is test_*
SEED_COLUMNS = ["n_seeds", "test_accuracy_mean", "test_accuracy_ci_low", "test_accuracy_ci_high",
                "train_seconds_mean", "speedup", "speedup_ci_low", "speedup_ci_high", "confirmed"]
PARETO_COLUMNS = pareto_columns("accuracy")


def test_pareto_csv_is_the_front_of_seed_means(built_run):
    pareto = pd.read_csv(built_run / "pareto.csv")
    trials = pd.read_csv(built_run / "trials.csv").set_index("number")
    assert list(pareto.columns[: len(PARETO_COLUMNS)]) == PARETO_COLUMNS
    assert set(SEED_COLUMNS) <= set(PARETO_COLUMNS) and list(pareto.columns).count("speedup") == 1
    assert {"params_optimizer.lr", "params_label_smoothing.smoothing"} <= set(pareto.columns)
    # fake_run's docstring: the baseline's fastest point and the confirmed recipe's three, each over 3 seeds
    p = pareto.set_index("number")
    assert list(p.index) == [0, CONFIRMED_NUMBER, 6, 7] and (p["n_seeds"] == 3).all()
    assert p["accuracy"].to_numpy() == pytest.approx([0.90, 0.95, 0.962, 0.97])  # means (test: also selected on)
    assert p["test_accuracy_mean"].to_numpy() == pytest.approx(p["accuracy"].to_numpy())
    assert not {"accuracy_mean", "accuracy_ci_low", "accuracy_ci_high", "val_accuracy_mean"} & set(pareto.columns)
    assert p["train_seconds_mean"].to_numpy() == pytest.approx([2.0, 4.0, 7.0, 15.0])
    assert (p["test_accuracy_ci_high"] - p["test_accuracy_mean"]).to_numpy() == pytest.approx([ACC_HALF] * 4)
    assert (p["test_accuracy_mean"] - p["test_accuracy_ci_low"]).to_numpy() == pytest.approx([ACC_HALF] * 4)
    for number in p.index:  # the point's first run gives its recipe
        assert p.loc[number, "recipe_id"] == trials.loc[number, "recipe_id"]
    row = p.loc[CONFIRMED_NUMBER]
    assert row["speedup"] == pytest.approx(2.0) and 1 < row["speedup_ci_low"] < 2.0 < row["speedup_ci_high"]
    assert bool(row["confirmed"]) and not p.loc[[0, 6, 7], "confirmed"].astype(bool).any()
    # the recipe's curve, on each of its points; none for the baseline
    assert list(p["curve_confirmed"].astype(bool)) == [False, True, True, True]
    assert p.loc[[CONFIRMED_NUMBER, 6, 7], "curve_speedup"].to_numpy() == pytest.approx([CURVE_SPEEDUP] * 3)
    assert math.isnan(p.loc[0, "curve_speedup"]) and (p.loc[[4, 6, 7], "curve_budgets"] == 3).all()


def test_pareto_csv_of_single_runs(tmp_path):
    from recipesearch.report import build_info, write_report

    from .fake_run import SEARCH_ROWS, write_run_dir

    run = write_run_dir(tmp_path / "run", trials_frame(SEARCH_ROWS))
    write_report(build_info(*load_run(run), run_dir=run), run)
    pareto = pd.read_csv(run / "pareto.csv")
    trials = pd.read_csv(run / "trials.csv").set_index("number")
    assert set(pareto["number"]) == non_dominated(completed_points(trials.reset_index()))
    assert (pareto["n_seeds"] == 1).all() and pareto["test_accuracy_ci_low"].isna().all()
    assert not pareto["confirmed"].astype(bool).any()
    for row in pareto.itertuples():  # a point of one run is that run
        assert row.accuracy == trials.loc[row.number, "accuracy"]
        assert row.train_seconds == trials.loc[row.number, "train_seconds"]
        assert row.recipe_id == trials.loc[row.number, "recipe_id"]
    assert pareto.set_index("number").loc[4, "speedup"] == pytest.approx(2.0)


def test_recipe_provenance_carries_means_intervals_seeds_and_the_curve(built_run):
    pareto = pd.read_csv(built_run / "pareto.csv").set_index("number")
    text = (built_run / pareto.loc[6, "recipe_file"]).read_text()
    time_half = T_975_2 * (7 / 16) / math.sqrt(3)
    curve = pareto.loc[6]
    assert (f"# measured at budget 1 over 3 seeds (mean +/- 95% CI half-width): accuracy 0.9620 +/- {ACC_HALF:.4f} "
            f"(test split, also selected on), train_seconds 7.00 +/- {time_half:.2f}; algorithms: label_smoothing"
            ) in text
    assert "# speedup at matched accuracy vs the baseline at this point: n/a (more accurate than any baseline" in text
    assert (f"# recipe curve over 3 budgets vs the baseline's: {CURVE_SPEEDUP:.2f}x [95% CI "
            f"{curve['curve_ci_low']:.2f}-{curve['curve_ci_high']:.2f}] at test acc 0.9500, 3+ seeds per budget; "
            "confirmed faster (interval above 1)") in text
    point = pareto.loc[CONFIRMED_NUMBER]
    text = (built_run / point["recipe_file"]).read_text()
    assert (f"# speedup at matched accuracy vs the baseline at this point: 2.00x [95% CI "
            f"{point['speedup_ci_low']:.2f}-{point['speedup_ci_high']:.2f}], confirmed faster") in text
    text = (built_run / pareto.loc[0, "recipe_file"]).read_text()
    assert "n/a (this is the baseline recipe)" in text and "over 3 seeds" in text


def test_recipe_provenance_of_a_single_run_states_no_interval():
    from recipesearch.report import build_info

    from .fake_run import SEARCH_ROWS

    info = build_info(trials_frame(SEARCH_ROWS), {}, "")
    text = info.recipe_for(5).yaml_text
    assert ("# measured at budget 0.5 on a single run (one seed: no interval): accuracy 0.9450 (test split, also "
            "selected on), train_seconds 3.00; algorithms: label_smoothing") in text
    assert "+/-" not in text and "CI" not in text and "(one seed: not confirmed)" in text
    assert "# recipe curve: none (this recipe was trained at one budget only)" in text
    assert "not confirmed (one seed per budget)" in info.recipe_for(6).yaml_text


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
