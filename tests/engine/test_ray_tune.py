"""search/ray_tune.py: the loop behind Tune's Searcher interface, crash notes, and a real search on Ray."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from ray.tune.search import Searcher

from recipesearch.engine import study as st
from recipesearch.engine.loop import SearchLoop
from recipesearch.engine.ray_tune import LoopSearcher, summarise_error
from recipesearch.engine.samplers import make_sampler
from recipesearch.engine.storage import make_storage, open_study

GOOD = {"accuracy": 0.91, "val_accuracy": math.nan, "loss": 0.3, "train_seconds": 1.5, "throughput": 900.0,
        "data_wait_fraction": 0.05, "epochs": 1.0, "error": None, "wall_seconds": 1.9, "node": "127.0.0.2"}


def test_the_searcher_is_the_loops_ask_and_tell(tmp_path, make_space):
    space = make_space(trials=3)
    storage = make_storage(f"sqlite:///{tmp_path / 'study.db'}")
    study = open_study(space, storage, make_sampler(space), resuming=False)
    loop = SearchLoop(space, study, storage, space.trials)
    loop.prepare(resuming=False)
    notes: dict[str, str] = {}
    searcher = LoopSearcher(loop, notes)
    configs = [searcher.suggest(f"t{i}") for i in range(3)]
    assert [c["number"] for c in configs] == [0, 1, 2] and configs[0]["recipe"]["budget"] == 0.5
    assert searcher.suggest("t3") is None  # the budget is in flight: Tune waits
    searcher.on_trial_complete("t0", result=dict(GOOD))
    notes["t1"] = "out of memory: killed"
    searcher.on_trial_complete("t1", error=True)
    searcher.on_trial_complete("t2")  # stopped before it reported: interrupted, queued again
    searcher.on_trial_complete("t2", result=dict(GOOD))  # told twice by Tune: the second is ignored
    states = [(t.state.name, t.user_attrs.get("error")) for t in study.get_trials()]
    # the lost worker's run (within max_failures) and the interrupted one are both queued again
    assert states == [("COMPLETE", None), ("FAIL", "out of memory: killed"), ("FAIL", st.INTERRUPTED),
                      ("WAITING", None), ("WAITING", None)]
    assert [t.user_attrs.get("requeued_from") for t in study.get_trials()[3:]] == [1, 2]
    assert searcher.suggest("t4")["number"] == 3 and searcher.suggest("t5")["number"] == 4
    searcher.on_trial_complete("t4", result=dict(GOOD))
    searcher.on_trial_complete("t5", result=dict(GOOD))
    assert st.count_finished(study.get_trials()) == 3
    assert searcher.suggest("t6") == Searcher.FINISHED
    assert searcher.__getstate__() == {}  # nothing of the loop goes into Tune's checkpoint


def test_summarise_error_names_memory_lost_nodes_and_dead_workers():
    memory = ("Failure # 1\nray.exceptions.OutOfMemoryError: 1 worker(s) were killed due to the node running low on "
              "memory. Memory on the node (IP: 127.0.0.2, ID: a9) was 4.75GB used / 23.54GB limit (0.2018)\n")
    assert summarise_error(memory) == ("out of memory: Ray's memory monitor killed the trial's worker (node memory "
                                       "4.75GB used of 23.54GB)")
    died = ("Failure # 1 (occurred at x)\nray.exceptions.ActorDiedError: The actor died unexpectedly before finishing "
            "this task.\n  class_name: X\nThe actor is dead because its worker process has died. Worker exit type: "
            "SYSTEM_ERROR Worker exit detail: ... (1) the process was killed by the OOM killer due to high memory")
    assert summarise_error(died) == ("worker crashed: its process died (SYSTEM_ERROR); killed by a signal, the "
                                     "kernel's OOM killer, or a crash")
    # only the last death counts: Tune appends one block per failure
    assert summarise_error(memory + died.replace("Failure # 1", "Failure # 2")).startswith("worker crashed")
    assert summarise_error("Failure # 1\nThe actor died because its node has died. Node Id: 1f") == (
        "worker lost: the node running the trial died")
    assert summarise_error("") == "the trial's worker process died"
    assert summarise_error("Failure # 1\nSomething else\nlast line") == "worker crashed: last line"


# -- a real search on a local Ray -------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.slow
def test_search_end_to_end(tmp_path, write_space, ray_env, load_run_study):
    """Baselines first, diverging trials recorded FAIL, trials.csv == the study, Ray gone.

    LR 1e20: this small CNN survives LR 1e6 with a huge but finite loss (its ReLUs die), 1e20 is NaN in steps.
    """
    import ray

    from recipesearch.engine.api import search

    # The random sampler with this seed draws LR 1e20 for some of the 6 non-baseline trials.
    # One trial at a time: one trial worker for the 8 (a worker's start costs seconds of CPU)
    path = write_space(hparams={"optimizer.lr": {"choices": [0.05, 1.0e20]}}, sampler={"name": "random", "seed": 3},
                       concurrency=1)
    out = tmp_path / "run"
    df = search(path, out=out, quiet=True, report=False).trials

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
    base = csv[csv["is_baseline"]]  # a sampler may draw the base recipe again: also a baseline, answered from it
    assert set(base["budget"]) == {0.5, 1.0} and set(base[base["duplicate_of"].isna()]["state"]) == {"COMPLETE"}
    assert (base.loc[base["duplicate_of"].notna(), "state"] == "PRUNED").all()
    assert csv.loc[csv["number"] < 2, "is_baseline"].all()

    # the absurd LR diverged, was recorded with its reason, and the search went on to the end
    failed = csv[csv["state"] == "FAIL"]
    assert len(failed) >= 1 and failed["error"].str.startswith("diverged: loss is").all()
    assert (failed["params_optimizer.lr"] == 1.0e20).all()
    assert (csv["state"] == "COMPLETE").sum() + len(failed) + csv["duplicate_of"].notna().sum() == 8

    # the run directory
    assert (out / "space.yaml").read_text() == path.read_text()
    meta = json.loads((out / "run.json").read_text())
    for key in ("command", "versions", "hardware", "start_time", "end_time", "space_hash", "storage", "ray_address"):
        assert meta[key], key
    assert meta["status"] == "finished" and meta["storage"] == f"sqlite:///{(out / 'study.db').resolve()}"
    assert not ray.is_initialized()  # we stop the Ray we started


@pytest.mark.ray
def test_a_local_ray_is_quiet_and_serves_no_dashboard(ray_env, capfd):
    from recipesearch.engine.ray_tune import RayHandle

    handle = RayHandle(None, threads=1)
    try:
        assert handle.started and handle.dashboard_url is None
        listening = Path("/proc/net/tcp").read_text() + Path("/proc/net/tcp6").read_text()
        # 8265 is the dashboard's port (0x2049); state 0A is LISTEN
        rows = [ln.split() for ln in listening.splitlines() if ln.strip() and not ln.lstrip().startswith("sl")]
        assert not [r for r in rows if r[1].endswith(":2049") and r[3] == "0A"]
    finally:
        handle.stop()
    printed = "".join(capfd.readouterr())
    assert "token" not in printed.lower() and "auth" not in printed.lower(), printed
