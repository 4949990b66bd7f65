"""recipesearch/engine/replicate.py: ``recipesearch replicate RUN_DIR`` retrains a finished search's claims and
its baseline with fresh seeds, interleaved, scores them on test, resumes, and refuses bad input in one line."""
from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import optuna
import pandas as pd
import pytest
import yaml

from recipesearch.analysis.replication import CLAIM_COLUMNS, FRESH_SEED_OFFSET
from recipesearch.engine import executors
from recipesearch.engine import study as st
from recipesearch.engine.replicate import ReplicateOptions, fresh_runs, replicate
from recipesearch.errors import UserError
from recipesearch.runlock import lock_run_dir
from tests.report import fake_run
from tests.test_cli import call_cli


def finished_search(path: Path, rows=fake_run.ROWS) -> Path:
    """fake_run's search (a confirmed label_smoothing curve of trial 4 over budgets 0.5, 1, 2), with a space
    that loads anywhere (its base recipe inline) and recipes small enough to train in a second."""
    fake_run.write_run_dir(path, fake_run.trials_frame(rows))
    space = {"name": "replicate-test", "base": fake_run.BASE, "metric_split": "test",
             "budgets": [0.25, 0.5, 1, 2], "concurrency": 2,
             "algorithms": {"label_smoothing": {"smoothing": {"range": [0.05, 0.3]}}, "channels_last": {}}}
    (path / "space.yaml").write_text(yaml.safe_dump(space, sort_keys=False))
    return path


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def study_of(out: Path) -> optuna.Study:
    return optuna.load_study(study_name="replicate-test", storage=f"sqlite:///{out / 'study.db'}")


def test_a_fresh_run_counts_for_its_own_arm_though_its_trial_is_not_the_recipes_first():
    """A point claim's trial (41) of a recipe whose first trial is 12: its runs carry the arm they retrain."""
    rows = pd.DataFrame({"state": ["COMPLETE"] * 3, "is_baseline": [True, False, False], "of_trial": [0, 41, 12],
                         "arm": ["baseline", "ema", ""], "seed": [1000, 1000, 1001], "budget": [1, 0.25, 0.5]})
    got = fresh_runs(rows, {"baseline": 0, "ema": 12}, space_seed=0)
    assert list(got["arm"]) == ["baseline", "ema", "ema"] and list(got["seed_index"]) == [1000, 1000, 1001]


def test_the_headline_is_retrained_beside_the_baseline_and_scored_on_test(tmp_path):
    run = finished_search(tmp_path / "run")
    before = snapshot(run)
    result = replicate(run, ReplicateOptions(seeds=2, claims="headline", executor="inprocess", quiet=True,
                                             report=False))
    out = run / "replication"
    assert snapshot(run) == {**before, **{k: v for k, v in snapshot(run).items() if k.startswith("replication/")}}
    trials = study_of(out).get_trials()
    # the baseline at its 4 budgets and the claimed recipe at its 3, each with 2 fresh seeds
    assert len(trials) == 14 and all(t.state.name == "COMPLETE" for t in trials)
    assert {st.stage_of(t) for t in trials} == {st.REPLICATE}
    runs = Counter((t.user_attrs["arm"], t.user_attrs["budget"], t.user_attrs["seed"]) for t in trials)
    assert max(runs.values()) == 1
    assert {t.user_attrs["seed"] for t in trials} == {FRESH_SEED_OFFSET, FRESH_SEED_OFFSET + 1}  # space seed 0
    # interleaved: within each seed the arms alternate who goes first from one budget to the next
    order = [(t.user_attrs["seed"], t.user_attrs["budget"], t.user_attrs["arm"]) for t in trials]
    first_seed = [arm for seed, budget, arm in order if seed == FRESH_SEED_OFFSET and budget in (0.5, 1.0)]
    assert first_seed in (["baseline", "label_smoothing", "label_smoothing", "baseline"],
                          ["label_smoothing", "baseline", "baseline", "label_smoothing"]) or len(set(first_seed)) == 2
    # the claimed recipe's runs are trial 4's recipe with the budget and seed put in
    recipe = [t for t in trials if t.user_attrs["arm"] != "baseline"][0]
    assert '"label_smoothing"' in recipe.user_attrs["recipe_json"] and recipe.user_attrs["of_trial"] == 4
    scored = pd.read_csv(out / "replication.csv")
    assert list(scored.columns) == list(CLAIM_COLUMNS) and len(scored) == 1
    row = scored.iloc[0]
    assert row["kind"] == "curve" and row["number"] == fake_run.CONFIRMED_NUMBER and row["fresh_seeds"] == 2
    assert row["reported_speedup"] == pytest.approx(fake_run.CURVE_SPEEDUP, rel=1e-3)
    assert row["fresh_runs"] == 6 and row["inside"] == (row["reported_ci_low"] <= row["fresh_speedup"]
                                                          <= row["reported_ci_high"])
    assert result.scored.shape[0] == 1
    # run again with --resume: nothing is trained again, the same table
    replicate(run, ReplicateOptions(seeds=2, claims="headline", executor="inprocess", quiet=True, report=False,
                                    resume=True))
    assert len(study_of(out).get_trials()) == 14
    # another seed count on the same folder is another replication: refused, nothing changed
    kept = snapshot(out)
    with pytest.raises(UserError, match="--seeds"):
        replicate(run, ReplicateOptions(seeds=3, claims="headline", executor="inprocess", quiet=True,
                                        report=False, resume=True))
    assert {k: v for k, v in snapshot(out).items() if not k.startswith(".")} == \
        {k: v for k, v in kept.items() if not k.startswith(".")}


def test_an_interrupted_replication_resumes_without_losing_or_repeating_a_run(tmp_path, monkeypatch):
    run = finished_search(tmp_path / "run")
    real, calls = executors.train_proposal, []

    def dies_on_the_fourth(proposal, checkpoints=None):
        calls.append(proposal.number)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(proposal, checkpoints)

    monkeypatch.setattr(executors, "train_proposal", dies_on_the_fourth)
    opts = dict(seeds=1, claims="headline", executor="inprocess", quiet=True, report=False)
    with pytest.raises(KeyboardInterrupt):
        replicate(run, ReplicateOptions(**opts))
    out = run / "replication"
    assert not (out / "replication.csv").exists()
    monkeypatch.setattr(executors, "train_proposal", real)
    with pytest.raises(UserError, match="not empty"):  # a second start without --resume is refused
        replicate(run, ReplicateOptions(**opts))
    replicate(run, ReplicateOptions(**opts, resume=True))
    trials = study_of(out).get_trials()
    done = Counter((t.user_attrs["arm"], t.user_attrs["budget"]) for t in trials if t.state.name == "COMPLETE")
    assert sum(done.values()) == 7 and max(done.values()) == 1  # 4 + 3 budgets, each once
    assert sum(t.user_attrs.get("error") == st.INTERRUPTED for t in trials) == 1
    assert len(pd.read_csv(out / "replication.csv")) == 1


def test_bad_input_is_one_line_and_changes_nothing(tmp_path, capsys):
    run = finished_search(tmp_path / "run")
    before = snapshot(run)
    code, _, err = call_cli(capsys, "replicate", str(run), "--seeds", "0")
    assert code == 2 and "--seeds" in err and len(err.strip().splitlines()) == 1
    code, _, err = call_cli(capsys, "replicate", str(tmp_path / "nowhere"))
    assert code == 2 and "RUN_DIR" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "run.json").write_text("{not json")
    (tmp_path / "broken" / "trials.csv").write_text("number,state\n0,COMPLETE\n")
    broken = snapshot(tmp_path / "broken")
    code, _, err = call_cli(capsys, "replicate", str(tmp_path / "broken"), "--executor", "inprocess")
    assert code == 2 and "run.json" in err and len(err.strip().splitlines()) == 1
    assert snapshot(tmp_path / "broken") == broken
    # a second replicate while one runs: refused before anything is read or written
    out = tmp_path / "held"
    held = lock_run_dir(out)
    try:
        code, _, err = call_cli(capsys, "replicate", str(run), "--out", str(out), "--executor", "inprocess")
    finally:
        held.release()
    assert code == 2 and len(err.strip().splitlines()) == 1 and "another recipesearch is driving" in err
    assert snapshot(run) == before


def test_a_search_without_a_confirmed_claim_says_so_and_exits_0(tmp_path, capsys):
    run = finished_search(tmp_path / "run", rows=fake_run.SEARCH_ROWS)  # one seed everywhere: nothing confirmed
    before = snapshot(run)
    code, out, err = call_cli(capsys, "replicate", str(run), "--executor", "inprocess")
    assert code == 0 and out.startswith("no confirmed claim to replicate") and not err
    assert snapshot(run) == before and not (run / "replication").exists()


def test_the_python_api_checks_its_arguments(tmp_path):
    import recipesearch

    run = finished_search(tmp_path / "run")
    with pytest.raises(TypeError, match="run_dir"):
        recipesearch.replicate(None)
    with pytest.raises(TypeError, match="resume"):
        recipesearch.replicate(run, resume="yes")
    with pytest.raises(UserError, match="--seeds"):
        recipesearch.replicate(run, seeds=0)
    with pytest.raises(UserError, match="--claims"):
        recipesearch.replicate(run, claims="best")
    assert not (run / "replication").exists()


@pytest.mark.system
@pytest.mark.ray
def test_a_replication_runs_on_ray_like_a_search(tmp_path, shared_ray_here):
    # on a Ray it joins (--address), as a search does: the suite's shared one spares a Ray start of its own
    run = finished_search(tmp_path / "run")
    replicate(run, ReplicateOptions(seeds=1, claims="headline", quiet=True, report=False, concurrency=1,
                                    address=shared_ray_here.address))  # one trial worker does
    out = run / "replication"
    trials = pd.read_csv(out / "trials.csv")
    assert len(trials) == 7 and (trials["state"] == "COMPLETE").all() and set(trials["stage"]) == {"replicate"}
    assert trials["cpu_share"].notna().all() and trials["load_start"].notna().all()
    assert (out / "ray").is_dir() and len(pd.read_csv(out / "replication.csv")) == 1
