"""The search's scheduler (space ``scheduler:``): rung reports, MO-ASHA stopping, promotion across budgets.

engine/scheduler.py decides (with ``analysis.rungs``, for the loop) and the study remembers;
these tests drive it in-process with a learning-curve objective standing in for training, then once with
real training, then on Ray Tune (a stopped trial's worker stops), then through kill -9 and --resume.
"""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time

import optuna
import pandas as pd
import pytest

from recipesearch.analysis.frontier import frontier
from recipesearch.engine import study as st
from recipesearch.engine.executors import InProcess, train_proposal
from recipesearch.engine.loop import SearchLoop
from recipesearch.engine.samplers import make_sampler
from recipesearch.engine.storage import make_storage, open_study
from recipesearch.engine.trial_rows import trials_frame
from recipesearch.report.info import build_info
from tests.conftest import call_cli
from tests.engine.conftest import REPO, TINY_BASE

optuna.logging.set_verbosity(optuna.logging.WARNING)


def curve_result(proposal) -> dict:
    """A learning curve: accuracy rises with the share of steps and the budget, the LR's distance from 0.05
    costs accuracy, label smoothing is faster. Reports at the proposal's rungs; stops when told to."""
    recipe = proposal.config["recipe"]
    budget, lr = recipe["budget"], recipe["optimizer"]["lr"]
    fast = "label_smoothing" in recipe["algorithms"]
    final = 0.80 + 0.05 * math.log2(budget * 4) - 0.04 * abs(math.log2(lr / 0.05))
    secs = 4.0 * budget * (0.8 if fast else 1.0)
    for fraction in proposal.config.get("rungs") or ():
        report = {"rung": fraction, "rung_accuracy": final * (0.6 + 0.4 * fraction), "train_seconds": secs * fraction}
        if proposal.on_rung is not None and not proposal.on_rung(report):
            return {**report, "pruned": True}
    return {"accuracy": final - 0.01, "val_accuracy": final, "train_seconds": secs, "loss": 0.1, "error": None}


def open_loop(tmp_path, space, resuming=False):
    storage = make_storage(f"sqlite:///{tmp_path / 'study.db'}")
    study = open_study(space, storage, make_sampler(space), resuming=resuming)
    messages: list[str] = []
    loop = SearchLoop(space, study, storage, space.trials, on_message=messages.append)
    loop.prepare(resuming)
    return loop, study, messages


MOASHA = {"name": "moasha", "reduction_factor": 3, "min_fraction": 1 / 9}
WIDE_LR = {"optimizer.lr": {"range": [0.001, 1.0], "log": True}}


def test_moasha_stops_dominated_trials_at_their_rung(tmp_path, make_space):
    space = make_space(scheduler=MOASHA, trials=30, hparams=WIDE_LR, sampler={"name": "random", "seed": 1})
    loop, study, _ = open_loop(tmp_path, space)
    loop.run(InProcess(curve_result, concurrency=2))
    trials = study.get_trials()
    pruned = [t for t in trials if t.state == optuna.trial.TrialState.PRUNED]
    assert pruned, "a random LR over three decades must leave some trials dominated at a rung"
    assert st.count_finished(trials) == 30  # the budget counts stopped trials as finished
    for t in pruned:
        assert st.stage_of(t) == st.SEARCH  # baselines never stop
        assert any(t.user_attrs[st.PRUNED_AT] == pytest.approx(r) for r in space.scheduler.rungs())
        assert "stopped: ranked" in t.user_attrs[st.PRUNE_REASON]
        last = t.user_attrs[st.RUNGS][-1]
        assert last[0] == pytest.approx(t.user_attrs[st.PRUNED_AT])
        # the last rung's values, its selection-split accuracy and its train_seconds so far
        assert t.user_attrs["accuracy"] == pytest.approx(last[1]) and t.user_attrs["train_seconds"] == last[2]
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE and st.stage_of(t) == st.SEARCH]
    assert all(len(t.user_attrs[st.RUNGS]) == 2 for t in complete)  # both rungs, then the end
    # budgets never mixed: at each rung a stopped trial ranked below n // eta of its own budget's trials there
    for t in pruned:
        frac, budget = t.user_attrs[st.PRUNED_AT], t.user_attrs["budget"]
        same = [u for u in trials if u.number < t.number and st.stage_of(u) == st.SEARCH
                and u.user_attrs.get("budget") == budget
                and any(abs(r[0] - frac) < 1e-9 for r in u.user_attrs.get(st.RUNGS) or [])]
        assert len(same) + 1 >= space.scheduler.reduction_factor
    # trials.csv: PRUNED rows with their rung, never on the frontier
    df = trials_frame(trials, space)
    rows = df[df["state"] == "PRUNED"]
    assert len(rows) == len(pruned) and rows["pruned_at"].notna().all() and rows["rungs"].str.startswith("[[").all()
    f = frontier(df, space)
    assert not set(f.front["number"]) & set(rows["number"])
    # the report: stopped trials are not failures, and a note says what stopping them saved
    info = build_info(df, {"objectives": space.objectives, "metric_split": space.metric_split})
    assert "PRUNED" not in set(info.failed["state"])
    note = next(w for w in info.warnings if w.startswith("scheduler:"))
    assert f"{len(pruned)} of {(df['stage'] == 'search').sum()} proposals stopped" in note and "s saved" in note


def test_the_cli_scheduler_overrides_the_space_and_bad_names_exit_2(tmp_path, write_space, capsys):
    path = write_space()
    code, _, err = call_cli(capsys, "search", str(path), "--out", str(tmp_path / "run"), "--scheduler", "hyperband")
    assert code == 2 and "--scheduler" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()
    code, _, err = call_cli(capsys, "search", str(path), "--out", str(tmp_path / "run"), "--scheduler", "moasha",
                            "--executor", "inprocess", "--quiet", "--no-report", "--trials", "4")
    assert code == 0, err[-2000:]
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["scheduler"]["name"] == "moasha" and meta["scheduler"]["reduction_factor"] == 3
    csv = pd.read_csv(tmp_path / "run" / "trials.csv")
    assert csv.loc[csv["stage"] == "search", "rungs"].str.startswith("[[").all()


def test_with_scheduler_is_a_copy_with_the_same_hash(make_space):
    space = make_space()
    moasha = space.with_scheduler(name="moasha", min_fraction=1 / 3)
    assert (moasha.scheduler.name, moasha.scheduler.rungs()) == ("moasha", pytest.approx((1 / 3,)))
    assert space.scheduler.name == "fifo" and moasha.hash == space.hash  # operational: the space is the same


def test_fifo_never_reports_rungs(tmp_path, make_space):
    space = make_space(trials=6)
    loop, study, _ = open_loop(tmp_path, space)
    loop.run(InProcess(curve_result, concurrency=2))
    assert all(st.RUNGS not in t.user_attrs and t.state.name == "COMPLETE" for t in study.get_trials())


def test_promote_starts_cheap_and_retrains_the_best_at_the_next_budget(tmp_path, make_space):
    space = make_space(scheduler={"name": "promote", "reduction_factor": 3}, trials=16, hparams=WIDE_LR,
                       budgets=[0.25, 0.5, 1], sampler={"name": "random", "seed": 2})
    loop, study, messages = open_loop(tmp_path, space)
    loop.run(InProcess(curve_result, concurrency=2))
    trials = study.get_trials()
    search = [t for t in trials if st.stage_of(t) == st.SEARCH]
    promoted = [t for t in search if t.user_attrs.get(st.PROMOTED_FROM) is not None]
    sampled = [t for t in search if t.user_attrs.get(st.PROMOTED_FROM) is None]
    assert all(t.params["budget"] == 0.25 for t in sampled)  # new candidates at the cheapest budget
    assert promoted and any("promoted to budget" in m for m in messages)
    by_number = {t.number: t for t in trials}
    for t in promoted:
        parent = by_number[t.user_attrs[st.PROMOTED_FROM]]
        assert t.params["budget"] > parent.params["budget"]
        same = {k: v for k, v in t.params.items() if k != "budget"}
        assert same == {k: v for k, v in parent.params.items() if k != "budget"}
    # nothing trained twice, nothing left queued, the budget kept
    keys = [st.run_key(st.trial_params(t), st.seed_index(t)) for t in trials]
    assert len(keys) == len(set(keys))
    assert st.count_in_state(trials, optuna.trial.TrialState.WAITING) == 0 and st.count_finished(trials) == 16


def test_moasha_and_promote_combine(tmp_path, make_space):
    space = make_space(scheduler={"name": "moasha+promote"}, trials=24, hparams=WIDE_LR,
                       budgets=[0.25, 0.5, 1], sampler={"name": "random", "seed": 3})
    loop, study, _ = open_loop(tmp_path, space)
    loop.run(InProcess(curve_result, concurrency=2))
    trials = study.get_trials()
    states = {t.state.name for t in trials}
    assert "PRUNED" in states and any(t.user_attrs.get(st.PROMOTED_FROM) is not None for t in trials)
    assert st.count_finished(trials) == 24


def test_a_real_pruned_run_stops_training_at_its_rung(tmp_path, make_space):
    """In-process with real training: the stopped trial ends at its rung, after the rung's share of the steps."""
    space = make_space(scheduler={"name": "moasha", "reduction_factor": 2, "min_fraction": 0.25}, trials=3,
                       budgets=[1], hparams={"optimizer.lr": {"choices": [0.05, 1.0e-5]}},
                       sampler={"name": "random", "seed": 0})
    loop, study, _ = open_loop(tmp_path, space)
    # after the baseline: the base LR with label smoothing, then an LR of 1e-5, which learns nothing: with two
    # trials at its rung and eta 2 only one goes on (dominated, or the same hypervolume and reported second)
    for lr, ls in ((0.05, True), (1.0e-5, False)):
        study.enqueue_trial({"budget": 1.0, "optimizer.lr": lr, "alg.label_smoothing": ls})
    results: dict[int, dict] = {}

    def train_and_keep(proposal):
        results[proposal.config["number"]] = result = train_proposal(proposal)
        return result

    loop.run(InProcess(train_and_keep))
    trials = study.get_trials()
    pruned = [t for t in trials if t.state.name == "PRUNED"]
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    assert pruned and all(t.params["optimizer.lr"] == 1.0e-5 for t in pruned)
    full_steps = {results[t.number]["steps"] for t in complete}
    assert len(full_steps) == 1, full_steps  # one budget: every full run trains the same steps
    (steps,) = full_steps
    for t in pruned:
        # stopped at the rung it was pruned at (a quarter or a half), having trained that share of the steps
        assert t.user_attrs["pruned_at"] in (0.25, 0.5) and t.user_attrs["rungs"][-1][0] == t.user_attrs["pruned_at"]
        assert results[t.number]["pruned"] and results[t.number]["step"] == round(steps * t.user_attrs["pruned_at"])
        assert t.user_attrs["rung_eval_seconds"] > 0
    assert all(t.user_attrs["rung_seconds"] > 0 for t in complete if st.stage_of(t) == st.SEARCH)


@pytest.mark.system
def test_ray_stops_a_pruned_trials_worker(tmp_path, write_space, ray_env, shared_ray, trial_faults):
    """On Ray Tune (the session's shared Ray): the scheduler's STOP ends the trial's training; PRUNED in the
    study and trials.csv; the search finishes its trial count."""
    from recipesearch.engine.api import search

    # Two recipes are proposed besides the baseline's (the rest repeat one of the three, answered at once): LR 0.2
    # first, then LR 1e-5 (the random sampler's seed 6 and one trial at a time fix that order). Every rung report
    # says the same time (trial_faults' rung_time), so the 1e-5 trial, at chance, is dominated at its first rung by
    # construction: which of the two ran faster decides nothing.
    path = write_space(scheduler={"name": "moasha", "reduction_factor": 2, "min_fraction": 0.25}, trials=8,
                       budgets=[1], hparams={"optimizer.lr": {"choices": [0.2, 1.0e-5]}},
                       sampler={"name": "random", "seed": 6}, concurrency=1, base={**TINY_BASE, "max_duration": 4},
                       algorithms={})
    out = tmp_path / "run"
    faults = trial_faults({"kind": "rung_time", "seconds_per_rung": 1.0})
    df = search(path, out=out, quiet=True, report=False, address=shared_ray.address, plugins=[faults]).trials
    csv = pd.read_csv(out / "trials.csv")
    assert st.count_finished_rows(csv) == 8 and df["state"].tolist() == csv["state"].tolist()
    # seven proposals, at most half of each rung's trials go on: someone was stopped
    pruned = csv[(csv["state"] == "PRUNED") & csv["duplicate_of"].isna()]  # stopped, not a repeat answered at once
    full = csv[(csv["state"] == "COMPLETE")]
    assert len(pruned) == 1 and pruned["pruned_at"].tolist() == [0.25]
    assert json.loads(pruned["params_optimizer.lr"].map(json.dumps).iloc[0]) == 1.0e-5
    # the worker stopped at its rung: it reported no rung after the one it was stopped at, while every full run
    # (a search proposal) reported both
    for _, row in pruned.iterrows():
        assert [r[0] for r in json.loads(row["rungs"])] == [0.25, 0.5][:[0.25, 0.5].index(row["pruned_at"]) + 1]
        assert row["accuracy"] == pytest.approx(json.loads(row["rungs"])[-1][1])
    searched = full[full["stage"] == "search"]
    assert len(searched) >= 1
    assert all([r[0] for r in json.loads(rungs)] == [0.25, 0.5] for rungs in searched["rungs"])


@pytest.mark.system
def test_kill_mid_rung_then_resume_loses_nothing_and_runs_nothing_twice(tmp_path, write_space, trial_faults, capsys):
    """kill -9 while a trial sits in a rung report, then --resume: each run finishes exactly once."""
    path = write_space(scheduler=MOASHA, trials=10, hparams=WIDE_LR, sampler={"name": "random", "seed": 4},
                       concurrency=1)
    out = tmp_path / "run"
    marker = out.parent / "in_rung"
    # the 4th rung report holds its trial (60 s at most) until the kill below lands in it; the earlier ones need
    # not wait for it, nor the --resume's own reports (the count goes on past 4)
    faults = trial_faults({"kind": "pause_rungs", "file": str(marker), "sleep": 60, "pauses": 4, "after": 3})
    proc = subprocess.Popen([sys.executable, "-m", "recipesearch", "search", str(path), "--out", str(out),
                             "--executor", "inprocess", "--quiet", "--no-report", "--plugin", faults], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if marker.exists() and int(marker.read_text() or 0) >= 4:  # in its fourth rung report or later
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    study = optuna.load_study(study_name="tiny", storage=f"sqlite:///{out / 'study.db'}")
    running = [t for t in study.get_trials() if t.state.name == "RUNNING"]
    assert running and st.RUNGS in running[0].user_attrs  # killed with a trial inside a rung

    # the resume in this process (it is not killed; the fault plugin it imports again no longer pauses)
    code, _, err = call_cli(capsys, "search", str(path), "--out", str(out), "--executor", "inprocess", "--quiet",
                            "--no-report", "--resume")
    assert code == 0, err[-2000:]
    trials = optuna.load_study(study_name="tiny", storage=f"sqlite:///{out / 'study.db'}").get_trials()
    finished = [t for t in trials if st.is_finished(t)]
    keys = [st.run_key(st.trial_params(t), st.seed_index(t)) for t in finished]
    assert len(keys) == len(set(keys)) == st.count_finished(trials) == 10  # none lost, none twice
    killed = running[0].number
    assert trials[killed].user_attrs.get("error") == st.INTERRUPTED
    assert any(t.user_attrs.get(st.REQUEUED_FROM) == killed and st.is_finished(t) for t in trials)
    json.loads((out / "run.json").read_text())  # readable after the kill and the resume
