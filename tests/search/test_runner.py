"""The search driver: the searcher over the persistent study, trials.csv == storage, baselines, failures."""
from __future__ import annotations

import json
import math

import optuna
import pandas as pd
import pytest

from recipesearch.errors import ConfigError
from recipesearch.search import storage as st
from recipesearch.search.runner import StudySearch, outcome, summarise_error
from recipesearch.search.samplers import make_sampler
from recipesearch.search.trial import run_recipe

optuna.logging.set_verbosity(optuna.logging.WARNING)


@pytest.fixture
def searcher(tmp_path, make_space):
    """A StudySearch over a fresh SQLite study with the baselines enqueued, and what its hooks saw."""
    space = make_space()
    storage = st.make_storage(f"sqlite:///{tmp_path / 'study.db'}")
    sampler = make_sampler(space)
    study = st.open_study(space, storage, sampler, resuming=False)
    st.ensure_baselines(study, space)
    seen = {"started": [], "finished": [], "notes": {}}
    s = StudySearch(space, storage, sampler, lambda t, a: seen["started"].append((t.number, a)),
                    lambda f: seen["finished"].append(f), seen["notes"])
    return s, study, space, seen


GOOD = {"accuracy": 0.91, "val_accuracy": math.nan, "loss": 0.3, "train_seconds": 1.5, "throughput": 900.0,
        "data_wait_fraction": 0.05, "epochs": 1.0, "error": None, "wall_seconds": 1.9, "node": "127.0.0.2"}


def test_first_trials_are_the_baselines_and_get_a_recipe(searcher):
    s, study, space, seen = searcher
    configs = [s.suggest(f"t{i}") for i in range(len(space.budgets))]
    assert [c["number"] for c in configs] == [0, 1]
    for c, budget in zip(configs, space.budgets):
        assert c["error"] is None and c["recipe"]["budget"] == budget
        assert c["threads"] == space.threads_per_trial
    trials = study.get_trials()
    assert all(t.user_attrs["is_baseline"] for t in trials[:2])
    assert [t.params for t in trials] == space.baselines()
    assert [a["is_baseline"] for _, a in seen["started"]] == [True, True]


def test_a_finished_trial_is_stored_whole_and_the_csv_row_matches(searcher):
    s, study, space, seen = searcher
    s.suggest("a")
    s.on_trial_complete("a", result=dict(GOOD))
    t = study.get_trials()[0]
    assert t.state.name == "COMPLETE" and t.values == [0.91, 1.5]
    assert t.user_attrs["wall_seconds"] == 1.9 and t.user_attrs["node"] == "127.0.0.2"
    assert seen["finished"][0].number == 0
    frame = st.trials_frame(study.get_trials(), space, space.param_names())
    assert frame["state"].tolist() == ["COMPLETE", "WAITING"]  # the other baseline is still queued
    row = frame.iloc[0]
    assert list(row.index[:6]) == list(st.HEAD_COLUMNS) and list(row.index[-13:]) == list(st.TAIL_COLUMNS)
    assert row["state"] == "COMPLETE" and bool(row["is_baseline"]) and row["budget"] == 0.5
    assert row["accuracy"] == 0.91 and row["train_seconds"] == 1.5 and row["error"] == ""
    recipe = json.loads(row["recipe_json"])
    assert recipe["budget"] == 0.5 and recipe["seed"] == space.seed
    assert {c for c in row.index if c.startswith("params_")} == {f"params_{n}" for n in space.param_names()}


def test_failures_are_recorded_with_their_reason(searcher):
    s, study, space, seen = searcher
    s.suggest("diverged")
    s.on_trial_complete("diverged", result={**GOOD, "accuracy": math.nan, "train_seconds": math.nan,
                                            "error": "diverged: loss is nan at step 3"})
    s.suggest("crashed")
    seen["notes"]["crashed"] = "worker crashed: The actor died unexpectedly before finishing this task."
    s.on_trial_complete("crashed", error=True)
    s.suggest("nan")
    s.on_trial_complete("nan", result={**GOOD, "accuracy": math.nan})
    t0, t1, t2 = study.get_trials()
    assert [t.state.name for t in (t0, t1, t2)] == ["FAIL"] * 3
    assert t0.user_attrs["error"] == "diverged: loss is nan at step 3"
    assert t1.user_attrs["error"].startswith("worker crashed: The actor died")
    assert "no finite test accuracy" in t2.user_attrs["error"]
    assert st.count_finished(study.get_trials()) == 3


def test_a_trial_stopped_without_result_is_interrupted_and_queued_again(searcher):
    s, study, space, _ = searcher
    s.suggest("x")
    s.on_trial_complete("x")  # Tune stops a trial that never reported
    trials = study.get_trials()
    assert trials[0].state.name == "FAIL" and trials[0].user_attrs["error"] == st.INTERRUPTED
    requeued = [t for t in trials if t.user_attrs.get("requeued_from") == 0]
    assert len(requeued) == 1 and requeued[0].state.name == "WAITING"
    assert requeued[0].system_attrs["fixed_params"] == trials[0].params
    assert st.count_finished(trials) == 0


def test_an_invalid_combination_fails_without_training(searcher, monkeypatch):
    s, study, space, _ = searcher

    def bad(params):
        raise ConfigError("algorithms", "mixup and cutmix are forbidden together")

    monkeypatch.setattr(space, "recipe_for", bad)
    config = s.suggest("bad")
    assert config["recipe"] is None and config["error"].startswith("invalid recipe:")
    result = run_recipe(config)
    assert math.isnan(result["accuracy"]) and result["error"] == config["error"]
    s.on_trial_complete("bad", result=result)
    t = study.get_trials()[0]
    assert t.state.name == "FAIL" and "forbidden together" in t.user_attrs["error"]


def test_resume_marks_running_trials_interrupted_and_requeues_them(tmp_path, make_space):
    space = make_space()
    storage = st.make_storage(f"sqlite:///{tmp_path / 'study.db'}")
    study = st.open_study(space, storage, make_sampler(space), resuming=False)
    st.ensure_baselines(study, space)
    done = study.ask()
    space.suggest(done)
    study.tell(done, [0.5, 1.0])
    left = study.ask()  # a driver killed -9 leaves this RUNNING
    space.suggest(left)
    partial = study.ask()  # ... and this one killed while its params were being drawn
    partial.suggest_categorical("budget", space.budgets)
    again = st.open_study(space, st.make_storage(f"sqlite:///{tmp_path / 'study.db'}"), None, resuming=True)
    assert st.recover_interrupted(again) == 2
    trials = again.get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE", "FAIL", "FAIL", "WAITING"]  # partial: not re-run
    assert trials[3].system_attrs["fixed_params"] == trials[1].params
    assert trials[3].user_attrs["is_baseline"] is True  # the baseline at budget 1 is still a baseline
    assert st.ensure_baselines(again, space) == 0  # its requeued copy stands for it
    assert st.count_finished(trials) == 1


def test_outcome_objectives_and_constraints(make_space):
    space = make_space(constraints={"accuracy_min": 0.5}, objectives=["accuracy", "train_seconds", "cost"],
                   price_per_hour=3.6)
    attrs, values = outcome(space, dict(GOOD), None)
    assert values == pytest.approx([0.91, 1.5, 1.5 / 3600 * 3.6])
    assert attrs["cost"] == pytest.approx(0.0015) and attrs["constraints"] == pytest.approx([0.5 - 0.91])
    attrs, values = outcome(space, None, "worker crashed: x")
    assert values is None and attrs["error"] == "worker crashed: x"


def test_summarise_error_names_memory_and_dead_workers():
    assert summarise_error("Failure # 1\nray.exceptions.OutOfMemoryError: Task was killed due to the node "
                           "running low on memory.").startswith("out of memory:")
    text = "Failure # 1 (occurred at x)\nThe actor died unexpectedly before finishing this task.\n  class_name: X"
    assert summarise_error(text) == "worker crashed: The actor died unexpectedly before finishing this task."
    assert summarise_error("") == "the trial's worker process died"


def test_an_absurd_learning_rate_diverges_into_a_failure_record(make_space):
    space = make_space(hparams={"optimizer.lr": {"choices": [0.05, 1.0e20]}})
    params = {**space.baseline_params(0.5), "optimizer.lr": 1.0e20}
    result = run_recipe({"number": 0, "recipe": space.recipe_for(params).to_dict(), "error": None, "threads": 1})
    assert result["error"].startswith("diverged: loss is")
    assert math.isnan(result["accuracy"]) and result["wall_seconds"] > 0


# -- a real search on a local Ray -------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.slow
def test_search_end_to_end(tmp_path, write_space, ray_env, load_run_study):
    """Baselines first, diverging trials recorded FAIL, trials.csv == the study, Ray gone.

    LR 1e20: this small CNN survives LR 1e6 with a huge but finite loss (its ReLUs die), 1e20 is NaN in steps.
    """
    import ray

    from recipesearch.search.api import search

    # The random sampler with this seed draws LR 1e20 for some of the 6 non-baseline trials.
    path = write_space(hparams={"optimizer.lr": {"choices": [0.05, 1.0e20]}}, sampler={"name": "random", "seed": 3})
    out = tmp_path / "run"
    df = search(path, out=out, quiet=True, report=False)

    # trials.csv is the returned table, and both are the study
    csv = pd.read_csv(out / "trials.csv")
    assert list(csv.columns) == list(df.columns)
    assert csv["number"].tolist() == df["number"].tolist() and csv["state"].tolist() == df["state"].tolist()
    study = load_run_study(out)
    assert [d.name for d in study.directions] == ["MAXIMIZE", "MINIMIZE"]
    trials = study.get_trials()
    assert len(trials) == len(csv) == 8
    by_number = csv.set_index("number")
    for t in trials:
        row = by_number.loc[t.number]
        assert row["state"] == t.state.name
        if t.state.name == "COMPLETE":
            assert row["accuracy"] == pytest.approx(t.values[0]) and row["train_seconds"] == pytest.approx(t.values[1])
            assert row["train_seconds"] > 0 and 0 <= row["accuracy"] <= 1 and row["throughput"] > 0
        for name, value in t.params.items():
            assert str(row[f"params_{name}"]) == str(value)
        if t.state.name == "COMPLETE":  # each trial kept to its CPU share
            assert t.user_attrs["threads"] == 1 and t.user_attrs["wall_seconds"] >= t.user_attrs["train_seconds"]

    # the baseline curve: the base recipe at every budget, trained first
    base = csv[csv["is_baseline"]]  # a sampler may draw the base recipe again: also a baseline
    assert set(base["budget"]) == {0.5, 1.0} and set(base["state"]) == {"COMPLETE"}
    assert csv.loc[csv["number"] < 2, "is_baseline"].all()

    # the absurd LR diverged, was recorded with its reason, and the search went on to the end
    failed = csv[csv["state"] == "FAIL"]
    assert len(failed) >= 1 and failed["error"].str.startswith("diverged: loss is").all()
    assert (failed["params_optimizer.lr"] == 1.0e20).all()
    assert (csv["state"] == "COMPLETE").sum() + len(failed) == 8

    # the run directory
    assert (out / "space.yaml").read_text() == path.read_text()
    meta = json.loads((out / "run.json").read_text())
    for key in ("command", "versions", "hardware", "start_time", "end_time", "space_hash", "storage", "ray_address"):
        assert meta[key], key
    assert meta["status"] == "finished" and meta["storage"] == f"sqlite:///{(out / 'study.db').resolve()}"
    assert not ray.is_initialized()  # we stop the Ray we started


def test_the_sweep_proposes_stages_inside_one_tune_run(tmp_path, make_space):
    """Sweep: baselines, then nothing while they run (None), then the next stage once results are in."""
    from ray.tune.search import Searcher

    from recipesearch.search.samplers import SweepStrategy

    space = make_space(sampler="sweep", trials=6)
    storage = st.make_storage(f"sqlite:///{tmp_path / 'study.db'}")
    sampler = make_sampler(space)
    study = st.open_study(space, storage, sampler, resuming=False)
    st.ensure_baselines(study, space)
    s = StudySearch(space, storage, sampler, lambda t, a: None, lambda f: None, {}, SweepStrategy(space), 6)
    first = [s.suggest("b0"), s.suggest("b1")]
    assert [c["recipe"]["budget"] for c in first] == [0.5, 1.0]
    assert s.suggest("early") is None  # the next stage needs the baselines' results
    s.on_trial_complete("b0", result=dict(GOOD))
    s.on_trial_complete("b1", result={**GOOD, "accuracy": 0.95, "train_seconds": 3.0})
    moves = []
    while (config := s.suggest(f"m{len(moves)}")) is not None:
        moves.append(config)
    assert 1 <= len(moves) <= 4  # capped by the budget of 6 trials: nothing is left WAITING
    assert st.count_waiting(study.get_trials()) == 0
    for i, _ in enumerate(moves):
        s.on_trial_complete(f"m{i}", result=dict(GOOD))
    s._sweep.exhausted = lambda history: True  # pretend every stage has been tried
    s._sweep.propose = lambda history: []
    assert s.suggest("end") == Searcher.FINISHED


def test_the_objective_is_the_accuracy_of_the_metric_split(make_space):
    base = {"model": {"name": "cnn", "width": 8}, "data": {"name": "digits", "val_fraction": 0.2},
            "max_duration": 1, "device": "cpu"}
    space = make_space(base=base, metric_split="val")
    attrs, values = outcome(space, {**GOOD, "val_accuracy": 0.8}, None)
    assert values == [0.8, 1.5] and attrs["accuracy"] == 0.91 and attrs["val_accuracy"] == 0.8
    attrs, values = outcome(space, dict(GOOD), None)  # no validation accuracy: a failure, not test accuracy
    assert values is None and "no finite val accuracy" in attrs["error"]


def test_the_live_front_table_and_the_headline(make_space):
    from recipesearch.search.progress import LogUI, front_headline, front_table, headline

    space = make_space()
    rows = [  # number, state, is_baseline, budget, algorithms, accuracy, train_seconds
        (0, "COMPLETE", True, 0.5, "", 0.80, 1.0), (1, "COMPLETE", True, 1.0, "", 0.90, 2.0),
        (2, "COMPLETE", False, 0.5, "label_smoothing", 0.90, 1.0),  # baseline's 2 s accuracy in 1 s
        (3, "COMPLETE", False, 1.0, "label_smoothing", 0.85, 2.5),  # dominated
        (4, "FAIL", False, 1.0, "", math.nan, math.nan), (5, "RUNNING", False, 0.5, "", math.nan, math.nan),
    ]
    df = pd.DataFrame(rows, columns=["number", "state", "is_baseline", "budget", "algorithms", "accuracy",
                                     "train_seconds"]).assign(cost=math.nan, error="")
    front = front_table(df, space)
    assert front["number"].tolist() == [2]  # trial 2 dominates both baselines
    assert front["speedup"].tolist() == [pytest.approx(2.0)]
    assert headline(df, space).startswith("speedup at the longest baseline's accuracy 0.9000: 2.00x")
    assert front_headline(front).startswith(
        "largest speedup at matched accuracy on the front: 2.00x at 0.9000 (1.00 s): trial 2")
    df.loc[2, "accuracy"] = 0.78  # baseline 0 dominates it: only baselines are left, no recipe to name
    assert front_table(df, space)["number"].tolist() == [0, 1]
    assert front_headline(front_table(df, space)) is None
    df.loc[2, "accuracy"] = 0.80
    assert front_table(df, space)["number"].tolist() == [0, 2, 1]  # equal points both stay on the front

    lines = []
    ui = LogUI(stream=type("S", (), {"write": lambda self, t: lines.append(t), "flush": lambda self: None})())
    ui.start(space=space, total=6, done=0, run_dir="run", ray_address="local")
    ui.trial_finished({**df.iloc[4].to_dict(), "error": "diverged: loss is nan at step 3"}, df)
    assert any("trial 4 FAIL: diverged: loss is nan at step 3" in ln for ln in lines)


def test_force_starts_a_run_directory_again_and_resume_keeps_it(tmp_path, make_space):
    space = make_space()
    out = tmp_path / "run"
    run, resuming = st.prepare_run_dir(out, space, resume=False, force=False)
    assert not resuming and run.space_yaml.read_text() == space.text
    (out / "trials.csv").write_text("old")
    (out / "run.json").write_text("{}")
    run, resuming = st.prepare_run_dir(out, space, resume=True, force=False)
    assert resuming and (out / "trials.csv").read_text() == "old"
    run, resuming = st.prepare_run_dir(out, space, resume=False, force=True)
    assert not resuming and sorted(p.name for p in out.iterdir()) == ["space.yaml"]
