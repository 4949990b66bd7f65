"""search/loop.py: ask → recipe → tell over the persistent study; baselines, failures, requeue, sweep."""
from __future__ import annotations

import json
import math

import optuna
import pytest

from recipesearch.engine import study as st
from recipesearch.engine.executors import InProcess
from recipesearch.engine.loop import DONE, WAIT, SearchLoop
from recipesearch.engine.proposal import Proposal
from recipesearch.engine.queueing import enqueue, ensure_baselines, requeue_lost_workers
from recipesearch.engine.samplers import make_sampler
from recipesearch.engine.storage import make_storage, open_study
from recipesearch.engine.trial import run_recipe
from recipesearch.engine.trial_rows import trials_frame
from recipesearch.errors import ConfigError, UserError
from recipesearch.rundir import HEAD_COLUMNS, TAIL_COLUMNS

optuna.logging.set_verbosity(optuna.logging.WARNING)

GOOD = {"accuracy": 0.91, "val_accuracy": math.nan, "loss": 0.3, "train_seconds": 1.5, "throughput": 900.0,
        "data_wait_fraction": 0.05, "epochs": 1.0, "error": None, "wall_seconds": 1.9, "node": "127.0.0.2"}


def open_loop(tmp_path, space, n_trials=None, resuming=False):
    storage = make_storage(f"sqlite:///{tmp_path / 'study.db'}")
    study = open_study(space, storage, make_sampler(space), resuming=resuming)
    seen = {"started": [], "finished": []}
    loop = SearchLoop(space, study, storage, n_trials or space.trials, seen["started"].append,
                      seen["finished"].append)
    loop.prepare(resuming)
    return loop, study, seen


@pytest.fixture
def fresh(tmp_path, make_space):
    space = make_space()
    loop, study, seen = open_loop(tmp_path, space)
    return loop, study, space, seen


def test_first_trials_are_the_baselines_and_get_a_recipe(fresh):
    loop, study, space, seen = fresh
    proposals = [loop.ask() for _ in space.budgets]
    assert [p.number for p in proposals] == [0, 1]
    for p, budget in zip(proposals, space.budgets):
        assert p.config["error"] is None and p.config["recipe"]["budget"] == budget
        assert p.config["threads"] == space.threads_per_trial
    trials = study.get_trials()
    assert all(t.user_attrs["is_baseline"] for t in trials[:2])
    assert [t.params for t in trials] == space.baselines()
    assert [p.attrs["is_baseline"] for p in seen["started"]] == [True, True]


def test_a_finished_trial_is_stored_whole_and_the_csv_row_matches(fresh):
    loop, study, space, seen = fresh
    loop.tell(loop.ask(), dict(GOOD))
    t = study.get_trials()[0]
    assert t.state.name == "COMPLETE" and t.values == [0.91, 1.5]
    assert t.user_attrs["wall_seconds"] == 1.9 and t.user_attrs["node"] == "127.0.0.2"
    assert seen["finished"][0].number == 0
    frame = trials_frame(study.get_trials(), space, space.param_names())
    assert frame["state"].tolist() == ["COMPLETE", "WAITING"]  # the other baseline is still queued
    assert frame.iloc[1]["params_budget"] == 1.0  # a queued trial's params are in its row too
    row = frame.iloc[0]
    assert list(row.index[:6]) == list(HEAD_COLUMNS) and list(row.index[-len(TAIL_COLUMNS):]) == list(TAIL_COLUMNS)
    assert row["state"] == "COMPLETE" and bool(row["is_baseline"]) and row["budget"] == 0.5
    assert row["accuracy"] == 0.91 and row["train_seconds"] == 1.5 and row["error"] == ""
    recipe = json.loads(row["recipe_json"])
    assert recipe["budget"] == 0.5 and recipe["seed"] == space.seed
    assert {c for c in row.index if c.startswith("params_")} == {f"params_{n}" for n in space.param_names()}


def test_failures_are_recorded_with_their_reason(fresh):
    loop, study, space, _ = fresh
    loop.tell(loop.ask(), {**GOOD, "accuracy": math.nan, "train_seconds": math.nan,
                           "error": "diverged: loss is nan at step 3"})
    loop.tell(loop.ask(), None, crash="worker crashed: The actor died unexpectedly before finishing this task.")
    loop.tell(loop.ask(), {**GOOD, "accuracy": math.nan})  # the lost worker's run, queued again
    t0, t1, t2 = study.get_trials()
    assert t0.state.name == "FAIL" and t0.user_attrs["error"] == "diverged: loss is nan at step 3"
    assert t1.state.name == "FAIL" and t1.user_attrs["error"].startswith("worker crashed: The actor died")
    assert t1.user_attrs["worker_lost"] is True and t1.user_attrs["retries"] == 1
    assert t2.state.name == "FAIL" and "no finite test accuracy" in t2.user_attrs["error"]
    assert t2.user_attrs["requeued_from"] == 1 and t2.params == t1.params and t2.user_attrs["retries"] == 1
    assert "worker_lost" not in t0.user_attrs and "worker_lost" not in t2.user_attrs  # not retried
    # the lost worker's FAIL gave way to its re-run: two trials count
    assert st.count_finished(study.get_trials()) == 2 and loop.remaining() == space.trials - 2


def test_a_run_whose_worker_keeps_dying_stops_at_max_failures(fresh):
    loop, study, space, _ = fresh
    chain: list[int] = []  # the run whose worker dies, then each re-run of it
    while len(chain) <= space.max_failures:
        proposal = loop.ask()
        if not chain or proposal.trial.user_attrs.get("requeued_from") == chain[-1]:
            loop.tell(proposal, None, crash="out of memory: Ray's memory monitor killed the trial's worker")
            chain.append(proposal.number)
        else:
            loop.tell(proposal, dict(GOOD))
    trials = study.get_trials()
    assert [trials[n].user_attrs["retries"] for n in chain] == list(range(1, space.max_failures + 2))
    assert all(trials[n].state.name == "FAIL" and trials[n].user_attrs["worker_lost"] for n in chain)
    # past the limit nothing is queued: the last FAIL counts, the earlier ones gave way to their re-runs
    assert not [t for t in trials if t.user_attrs.get("requeued_from") == chain[-1]]
    others = sum(t.state.name == "COMPLETE" for t in trials)
    assert st.count_finished(trials) == others + 1
    # --resume queues it once more, and only once
    assert requeue_lost_workers(study) == 1 and requeue_lost_workers(study) == 0
    assert study.get_trials()[-1].user_attrs["requeued_from"] == chain[-1]
    assert st.count_finished(study.get_trials()) == others


def test_a_trial_stopped_without_result_is_interrupted_and_queued_again(fresh):
    loop, study, space, _ = fresh
    loop.tell(loop.ask(), None)  # Tune stops a trial that never reported
    trials = study.get_trials()
    assert trials[0].state.name == "FAIL" and trials[0].user_attrs["error"] == st.INTERRUPTED
    requeued = [t for t in trials if t.user_attrs.get("requeued_from") == 0]
    assert len(requeued) == 1 and requeued[0].state.name == "WAITING"
    assert st.trial_params(requeued[0]) == trials[0].params and requeued[0].user_attrs["is_baseline"] is True
    assert st.count_finished(trials) == 0 and not loop.in_flight


def test_an_invalid_combination_fails_without_training(fresh, monkeypatch):
    loop, study, space, _ = fresh

    def bad(params, seed_index=0):
        raise ConfigError("algorithms", "mixup and cutmix are forbidden together")

    monkeypatch.setattr(space, "recipe_for", bad)
    proposal = loop.ask()
    assert proposal.config["recipe"] is None and proposal.config["error"].startswith("invalid recipe:")
    result = run_recipe(proposal.config)
    assert math.isnan(result["accuracy"]) and result["error"] == proposal.config["error"]
    loop.tell(proposal, result)
    t = study.get_trials()[0]
    assert t.state.name == "FAIL" and "forbidden together" in t.user_attrs["error"]


def test_the_budget_counts_trials_in_flight(tmp_path, make_space):
    space = make_space(trials=3)
    loop, study, _ = open_loop(tmp_path, space)
    asked = [loop.ask() for _ in range(3)]
    assert all(isinstance(p, Proposal) for p in asked)
    assert loop.ask() == WAIT  # three in flight: the budget is spoken for
    for p in asked:
        loop.tell(p, dict(GOOD))
    assert loop.ask() == DONE and len(study.get_trials()) == 3


def test_resume_marks_running_trials_interrupted_and_requeues_them(tmp_path, make_space):
    space = make_space()
    storage = make_storage(f"sqlite:///{tmp_path / 'study.db'}")
    study = open_study(space, storage, make_sampler(space), resuming=False)
    ensure_baselines(study, space)
    done = study.ask()
    space.suggest(done)
    study.tell(done, [0.5, 1.0])
    left = study.ask()  # a driver killed -9 leaves this RUNNING
    space.suggest(left)
    partial = study.ask()  # ... and this one killed while its params were being drawn
    partial.suggest_categorical("budget", space.budgets)
    loop, again, _ = open_loop(tmp_path, space, resuming=True)
    trials = again.get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE", "FAIL", "FAIL", "WAITING"]  # partial: not re-run
    assert [t.user_attrs.get("error") for t in trials[1:3]] == [st.INTERRUPTED, st.INTERRUPTED]
    assert st.trial_params(trials[3]) == trials[1].params
    assert trials[3].user_attrs["is_baseline"] is True  # the baseline at budget 1 is still a baseline
    assert ensure_baselines(again, space) == 0  # its requeued copy stands for it
    assert st.count_finished(trials) == 1


def test_the_sweep_proposes_its_stages_as_results_come_in(tmp_path, make_space):
    """Sweep: baselines, then WAIT while they run, then the next stage once results are in."""
    space = make_space(sampler="sweep", trials=6)
    loop, study, _ = open_loop(tmp_path, space)
    first = [loop.ask(), loop.ask()]
    assert [p.config["recipe"]["budget"] for p in first] == [0.5, 1.0]
    assert loop.ask() == WAIT  # the next stage needs the baselines' results
    loop.tell(first[0], dict(GOOD))
    loop.tell(first[1], {**GOOD, "accuracy": 0.95, "train_seconds": 3.0})
    moves = []
    while isinstance(p := loop.ask(), Proposal):
        moves.append(p)
    assert 1 <= len(moves) <= 4  # capped by the budget of 6 trials: nothing is left WAITING
    assert st.count_in_state(study.get_trials(), optuna.trial.TrialState.WAITING) == 0
    for p in moves:
        loop.tell(p, dict(GOOD))
    loop.sweep.exhausted = lambda history: True  # pretend every stage has been tried
    loop.sweep.propose = lambda history: []
    assert loop.ask() == DONE


def test_the_in_process_executor_runs_a_search_to_its_budget(tmp_path, make_space):
    space = make_space(trials=5)
    loop, study, _ = open_loop(tmp_path, space)
    order = []

    def fake(proposal):
        order.append(proposal.number)
        return {**GOOD, "accuracy": 0.5 + 0.01 * proposal.number}

    loop.run(InProcess(fake, concurrency=2))
    trials = study.get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE"] * 5 and order == [0, 1, 2, 3, 4]
    assert [t.values[0] for t in trials] == pytest.approx([0.5, 0.51, 0.52, 0.53, 0.54])


def test_a_search_that_only_gets_interrupted_stops(tmp_path, make_space):
    loop, study, _ = open_loop(tmp_path, make_space(trials=4))
    with pytest.raises(UserError, match="keep getting interrupted"):
        loop.run(InProcess(lambda proposal: None))
    trials = study.get_trials()
    assert st.count_finished(trials) == 0 and all(st.is_interrupted(t) for t in trials if t.state.name == "FAIL")


def test_an_absurd_learning_rate_diverges_into_a_failure_record(make_space):
    space = make_space(hparams={"optimizer.lr": {"choices": [0.05, 1.0e20]}})
    params = {**space.baseline_params(0.5), "optimizer.lr": 1.0e20}
    result = run_recipe({"number": 0, "recipe": space.recipe_for(params).to_dict(), "error": None, "threads": 1})
    assert result["error"].startswith("diverged: loss is")
    assert math.isnan(result["accuracy"]) and result["wall_seconds"] > 0


def _finish_baselines(loop, space):
    for _ in space.budgets:
        loop.tell(loop.ask(), dict(GOOD))


def test_a_proposal_of_a_recipe_already_trained_is_answered_without_training(fresh):
    loop, study, space, seen = fresh
    _finish_baselines(loop, space)
    left = loop.remaining()
    enqueue(study, space.baselines()[0])  # a search proposal of the 0.5-budget base recipe: trained as trial 0
    proposal = loop.ask()  # the repeat is answered on the spot; the loop asks again
    repeat = study.get_trials()[2]
    assert proposal.number == 3 and repeat.state.name == "PRUNED"
    assert repeat.user_attrs["duplicate_of"] == 0 and repeat.user_attrs["train_seconds"] == 0.0
    assert "not trained again" in repeat.user_attrs["prune_reason"]
    assert 2 not in {p.number for p in seen["started"]} and seen["finished"][-1].number == 2  # never run
    assert loop.remaining() == left - 1  # a finished trial of the budget
    row = trials_frame(study.get_trials(), space, space.param_names()).iloc[2]
    assert row["state"] == "PRUNED" and row["duplicate_of"] == 0 and math.isnan(row["accuracy"])


def test_a_proposal_of_a_recipe_in_training_is_its_repeat_and_a_failed_one_is_trained_again(fresh):
    loop, study, space, _ = fresh
    first = loop.ask()  # the 0.5-budget baseline, running
    loop.tell(loop.ask(), {**GOOD, "accuracy": math.nan, "error": "diverged"})  # the 1.0 one fails
    enqueue(study, space.baselines()[0])
    enqueue(study, space.baselines()[1])
    again = loop.ask()
    assert again.params == space.baselines()[1]  # the failed recipe: a failure may not happen twice
    repeat = study.get_trials()[2]
    assert repeat.state.name == "PRUNED" and repeat.user_attrs["duplicate_of"] == first.number
    assert "(running)" in repeat.user_attrs["prune_reason"]


def test_a_space_of_four_recipes_trains_each_once_and_still_finishes_its_trial_budget(tmp_path, make_space):
    """Every repeat is a finished trial of the budget: a sampler that can only repeat cannot keep the loop asking."""
    space = make_space(trials=10, hparams={}, algorithms={"label_smoothing": {}}, sampler={"name": "random", "seed": 1})
    loop, study, seen = open_loop(tmp_path, space)
    trained = []

    def objective(proposal):
        trained.append(proposal.attrs["recipe_id"])
        return dict(GOOD)

    loop.run(InProcess(objective, concurrency=2))
    trials = study.get_trials()
    assert st.count_finished(trials) == 10 and len(trained) == len(set(trained)) <= 4  # each recipe once
    by_number = {t.number: t for t in trials}
    repeats = [t for t in trials if t.user_attrs.get("duplicate_of") is not None]
    assert len(repeats) == 10 - len(trained) > 0
    for t in repeats:
        original = by_number[t.user_attrs["duplicate_of"]]
        assert t.state.name == "PRUNED" and original.number < t.number
        assert original.user_attrs["recipe_id"] == t.user_attrs["recipe_id"] and original.state.name == "COMPLETE"
