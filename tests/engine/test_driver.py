"""search/driver.py + api.py: a whole search without Ray (the in-process executor), and its result object."""
from __future__ import annotations

import json

import pandas as pd
import pytest

import recipesearch
from recipesearch.engine.api import SearchResult
from recipesearch.errors import UserError


def test_an_in_process_search_runs_to_its_budget(tmp_path, write_space, load_run_study):
    path = write_space(trials=5)
    out = tmp_path / "run"
    result = recipesearch.search(path, out=out, executor="inprocess", quiet=True, report=False)
    assert isinstance(result, SearchResult) and result.run_dir.root == out
    csv = pd.read_csv(out / "trials.csv")
    assert csv["number"].tolist() == result.trials["number"].tolist() == [0, 1, 2, 3, 4]
    assert (csv["state"] == "COMPLETE").all() and csv.loc[:1, "is_baseline"].all()
    front = result.frontier.front  # computed from the table in hand: every front trial is one of ours
    assert len(front) >= 1 and set(front["number"]) <= set(csv["number"])
    assert result.headline is result.frontier.headline
    trials = load_run_study(out).get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE"] * 5
    meta = json.loads((out / "run.json").read_text())
    assert meta["executor"] == "inprocess" and meta["ray_address"] is None and meta["status"] == "finished"
    import ray

    assert not ray.is_initialized()  # no Ray was started


def test_in_process_cannot_join_a_cluster(tmp_path, write_space):
    with pytest.raises(UserError, match="--executor inprocess"):
        recipesearch.search(write_space(), out=tmp_path / "run", executor="inprocess", address="127.0.0.2:1")
    assert not (tmp_path / "run").exists()


def space_seed(csv: pd.DataFrame) -> int:
    """The space's seed: the seed of its first run (an LR sweep's or the baseline's first)."""
    return int(csv["seed"].iloc[0])


def test_a_search_with_every_stage_selects_on_val_and_reports_the_confirmation(tmp_path, write_space):
    # the shipped defaults on a tiny space: validation split, LR sweep, baseline seeds, confirmation
    path = write_space(trials=8, metric_split="val", baseline={"seeds": 2, "tune_lr": True},
                       confirm={"top_k": 1, "seeds": 2, "max_share": 0.9})
    out = tmp_path / "run"
    result = recipesearch.search(path, out=out, executor="inprocess", quiet=True, report=False)
    csv = pd.read_csv(out / "trials.csv")
    # 2 budgets x 2 seeds, less the LR sweep's run at the chosen LR: it is the first seed at budget 1
    assert csv["stage"].tolist()[:3] == ["tune"] * 3 and csv["stage"].tolist()[3:7] == ["baseline"] * 3 + ["search"]
    assert result.frontier.baseline_points["n_seeds"].tolist() == [2, 2]
    assert (csv["stage"] == "confirm").sum() > 0 and csv.loc[csv["stage"] == "confirm", "of_trial"].notna().all()
    assert csv["val_accuracy"].notna().all()  # every trial measured on the held-out split
    meta = json.loads((out / "run.json").read_text())
    c = meta["confirmation"]
    probe = c["probe"]  # the paired baseline's probe: the rest of it re-run only if the machine's speed moved
    assert c["candidates"] and c["runs"] + probe["runs"] == (csv["stage"] == "confirm").sum()
    assert 0 < c["share_of_train_seconds"] < 1
    assert set(c["early"]) <= set(c["candidates"]) and c["stopped_at_claim"] is None  # confirm.stop_at_claim off
    assert result.frontier.metric == "val_accuracy" and result.frontier.confirmed_front
    assert result.headline.verdict  # confirmed, or says why not
    # the paired baseline: its probe (the first seed at budget 1), then, only if the probe's time moved, the rest of
    # it at both budgets x 2 seeds; speedups use the baseline stage's runs, or the re-run one when there is one
    paired = csv[(csv["stage"] == "confirm") & csv["is_baseline"]]
    seeds = sorted(zip(paired["budget"], paired["seed"] - space_seed(csv), strict=True))
    assert (seeds == [(0.5, 0), (0.5, 1), (1.0, 0), (1.0, 1)]) if probe["moved"] else (seeds == [(1.0, 0)])
    assert probe["runs"] == (3 if probe["moved"] else 0) and probe["seconds"] > 0 and probe["early_seconds"] > 0
    assert result.frontier.paired is probe["moved"]
    assert set(result.frontier.baseline["stage"]) == ({"confirm"} if probe["moved"] else {"tune", "baseline"})
    assert {"cpu_share", "load_start", "load_end"} <= set(csv.columns) and csv["cpu_share"].notna().any()


def test_force_never_deletes_another_run_directorys_study(tmp_path, write_space):
    """Two run directories sharing one --storage: --force in the second refuses to delete the first's study,
    and leaves no trace of itself."""
    import optuna

    path, storage = write_space(trials=2), f"sqlite:///{tmp_path / 'shared.db'}"
    first = tmp_path / "first"
    recipesearch.search(path, out=first, storage=storage, executor="inprocess", quiet=True, report=False)
    with pytest.raises(UserError, match="belongs to the run directory .*first"):
        recipesearch.search(path, out=tmp_path / "second", storage=storage, executor="inprocess", quiet=True,
                            report=False, force=True)
    assert not (tmp_path / "second").exists()
    study = optuna.load_study(study_name="tiny", storage=storage)
    assert len(study.get_trials()) == 2 and study.user_attrs["run_dir"] == str(first.resolve())
    # --force from the owner's own directory still starts it again
    recipesearch.search(path, out=first, storage=storage, executor="inprocess", quiet=True, report=False, force=True)


@pytest.mark.system
def test_two_searches_started_at_once_on_a_new_sqlite_file(tmp_path, write_space):
    """The issue's race: two searches of one space, two run directories, one new --storage file, started
    together. One runs; the other is refused in one line (whichever step it loses: creating the tables,
    creating the study, or finding it owned by the other run directory) and leaves no --out behind."""
    import subprocess
    import sys

    space, db = write_space(trials=2), f"sqlite:///{tmp_path / 'shared.db'}"
    outs = [tmp_path / "a", tmp_path / "b"]
    procs = [subprocess.Popen([sys.executable, "-m", "recipesearch", "search", str(space), "--out", str(out),
                               "--storage", db, "--executor", "inprocess", "--quiet", "--no-report"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for out in outs]
    results = [(p.wait(timeout=240), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    loser = next(i for i, (code, _, _) in enumerate(results) if code == 2)
    printed = results[loser][1] + results[loser][2]
    assert printed.startswith("error: ") and printed.count("\n") == 1 and "Traceback" not in printed, printed
    assert not outs[loser].exists() and (outs[1 - loser] / "trials.csv").exists()
