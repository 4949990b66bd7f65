"""Multi-worker trials (``resources: {workers: N}``, engine/ranks.py): the space file's checks, the Tune resources,
and searches on a local Ray where each trial trains data-parallel on 2 gloo ranks (CPU)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from recipesearch.engine.search_options import SearchOptions, resources_of
from recipesearch.errors import ConfigError, UserError
from recipesearch.space import Resources, resolve_resources
from tests.conftest import call_cli

# -- the space file and the command line ------------------------------------------------------------------


@pytest.mark.parametrize(("resources", "workers", "gpus"), [
    ({"cpus": 1, "workers": 2}, 2, "auto"),
    ({"workers": 2, "gpus_per_worker": 1}, 2, 1.0),
    ({"workers": 4, "gpus": 0}, 4, 0.0),
    ({"gpus_per_worker": 0.5}, 1, 0.5),  # one worker: fractions as before
])
def test_workers_and_gpus_per_worker(make_space, resources, workers, gpus):
    space = make_space(resources=resources)
    assert (space.resources.workers, space.resources.gpus) == (workers, gpus)


@pytest.mark.parametrize(("resources", "field", "words"), [
    ({"workers": 0}, "resources.workers", ">= 1"),
    ({"workers": 1.5}, "resources.workers", "integer"),
    ({"workers": 2, "gpus_per_worker": -1}, "resources.gpus_per_worker", "must be auto or a number of GPUs >= 0"),
    ({"workers": 2, "gpus_per_worker": 0.5}, "resources.gpus_per_worker", "one device: auto, 0 or 1, got 0.5"),
    ({"workers": 2, "gpus": 2}, "resources.gpus", "one device: auto, 0 or 1, got 2"),
    ({"gpus": 1, "gpus_per_worker": 1}, "resources.gpus_per_worker", "not both"),
    ({"workers": 3}, "resources.workers", "3 workers cannot share the base recipe's batch_size 64"),
])
def test_bad_workers_are_one_line(make_space, resources, field, words):
    with pytest.raises(ConfigError) as info:
        make_space(resources=resources)
    assert info.value.field == field and words in info.value.message, str(info.value)
    assert "\n" not in str(info.value)


def test_bad_workers_on_the_command_line_exit_2(tmp_path, write_space, capsys):
    code, _, err = call_cli(capsys, "search", str(write_space(resources={"workers": 0})), "--out",
                            str(tmp_path / "run"))
    assert code == 2 and err.count("\n") == 1 and "resources.workers" in err, err
    assert not (tmp_path / "run").exists()


def test_one_worker_spaces_keep_their_hash(make_space):
    one = make_space(resources={"cpus": 1})
    assert '"resources":{"cpus":1.0,"gpus":"auto"}' in one._canonical()
    assert make_space(resources={"cpus": 1, "workers": 1}).hash == one.hash
    assert make_space(resources={"cpus": 1, "workers": 2}).hash != one.hash


def test_the_header_and_run_json_say_what_each_trial_gets():
    shape = resolve_resources(Resources(cpus=1, gpus="auto", workers=2), 4, "auto")
    assert shape.gpus == 1.0 and shape.describe() == (
        "each trial: 2 data-parallel workers, each 1 CPU, 1 GPU (auto: the cluster has 4 GPUs)")
    assert shape.as_dict()["workers"] == 2
    # auto takes GPUs only where every worker of a trial can have one
    assert resolve_resources(Resources(cpus=1, gpus="auto", workers=4), 2, "auto").gpus == 0.0


def test_gpus_per_trial_is_each_workers(tmp_path, make_space):
    space = make_space(resources={"cpus": 1, "workers": 2})
    assert resources_of(space, SearchOptions(out=tmp_path, gpus_per_trial=1)) == Resources(1.0, 1.0, 2)
    with pytest.raises(UserError, match="--gpus-per-trial: with resources.workers 2 it is each worker's"):
        resources_of(space, SearchOptions(out=tmp_path, gpus_per_trial=2))


def test_inprocess_refuses_workers(tmp_path, write_space):
    from recipesearch.engine.api import search

    with pytest.raises(UserError, match="resources.workers 2 needs the Ray executor"):
        search(write_space(resources={"cpus": 1, "workers": 2}), out=tmp_path / "run", executor="inprocess",
               quiet=True, report=False)
    assert not (tmp_path / "run").exists()


def test_tune_gets_one_bundle_per_worker():
    from recipesearch.engine.ranks import tune_resources

    assert tune_resources(1, 0, 1) == {"cpu": 1, "gpu": 0}
    pgf = tune_resources(2, 1, 3)
    assert pgf.bundles == [{"CPU": 2, "GPU": 1}] * 3 and pgf.strategy == "PACK"
    assert tune_resources(1, 0, 2).bundles == [{"CPU": 1}] * 2


def test_a_peers_own_failure_explains_the_trial():
    """Rank 1 failed on its own and rank 0 noticed the closed connection: the trial's error is rank 1's."""
    from recipesearch.engine.ranks import _explain_failure

    gone = {"error": "RuntimeError: [../gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.2]:1"}
    own = {"error": "out of memory: CUDA out of memory"}
    assert _explain_failure(dict(gone), [own])["error"] == "rank 1 of 2: out of memory: CUDA out of memory"
    assert _explain_failure({"error": "diverged: loss is nan at step 3"}, [gone])["error"].startswith("diverged")
    ok = {"error": None, "accuracy": 0.9}
    assert _explain_failure(dict(ok), [{"error": None}]) == ok


def test_a_lost_peer_is_summarised_with_its_rank():
    from recipesearch.engine.ray_tune import summarise_error

    text = ("Failure # 1 (occurred at x)\nTraceback (most recent call last):\n  ...\nrecipesearch.engine.ranks."
            "WorkerLost: rank 3 of 4: its process died (NodeDiedError)\n")
    assert summarise_error(text) == "worker lost: rank 3 of 4: its process died (NodeDiedError)"


# -- on a local Ray: 2 gloo ranks a trial ---------------------------------------------------------------------


def _ray(cpus: int = 4, gpus: int = 0, plugins: list[Path] = ()) -> None:
    """This test's own Ray (fake GPUs, more CPUs than the machine's); a search that finds Ray started cannot give it
    a job runtime_env of its own, so the test ships its ``plugins`` files to the workers here, as a user would."""
    import ray

    ray.init(num_cpus=cpus, num_gpus=gpus, _node_ip_address="127.0.0.2", include_dashboard=False,
             log_to_driver=False, runtime_env={"py_modules": [str(p) for p in plugins]} if plugins else None)


@pytest.mark.ray
@pytest.mark.system
def test_a_search_of_two_worker_trials_whose_lost_peers_are_retried(tmp_path, write_space, shared_ray_here, capsys,
                                                                     load_run_study, trial_faults):
    """``recipesearch search`` on a Ray of 2 CPUs (the session's shared one), 3 trials of 2 ranks each (one bundle
    a rank), one search for three behaviours (each a search of its own before):

    1) every trial trains on 2 ranks; the header, run.json and the study record it (trial 2, uncut, at batch 32);
    2) a peer whose process dies before the group forms is retried (trial 0): rank 1's process is SIGKILLed at its
       start (first attempt only), rank 0 gives up at the group's timeout, the attempt ends as a lost worker, Tune
       runs the trial again and it completes;
    3) a two-worker trial goes on from its checkpoint (trial 1): checkpoints every 0.12 s, rank 1's process is
       SIGKILLed right after the trial's first checkpoint reached Tune (first attempt only); Tune runs the trial
       again from that checkpoint: it completes with resumes 1, every step trained once, and the accuracy of the
       same recipe run on 2 ranks without a break (torch.multiprocessing).

    (A batch size the workers cannot share is refused when the space loads: tests/space/test_reachable_combinations.py.)
    """
    from recipesearch.engine import study as st
    from tests.engine.conftest import TINY_BASE
    from tests.train.test_distributed_checkpoint import run_ranks

    # Trial 0's first attempt, whose rank 1 is surely dead, waits 3 s for its group (``group_timeout``) rather
    # than the timeout its retry gets (the default: the retry's rank 1 is a fresh Ray worker that imports torch,
    # over 16 s on 2 cores loaded by the suite's other half).
    faults = trial_faults({"kind": "sigkill", "trial": 0, "rank": 1, "once": str(tmp_path / "struck0")},
                          {"kind": "group_timeout", "trial": 0, "seconds": 3, "once": str(tmp_path / "short")},
                          {"kind": "sigkill", "trial": 1, "rank": 1, "after_checkpoint": 1,
                           "once": str(tmp_path / "struck1")})
    # trials 0 and 1: the baselines at budgets 0.5 and 1 (1.5 and 3 epochs, batch 64); trial 2: batch 32, budget 1
    path = write_space(trials=3, concurrency=1, budgets=[0.5, 1], resources={"cpus": 1, "workers": 2},
                       hparams={"batch_size": {"choices": [64, 32]}}, algorithms={},
                       sampler={"name": "random", "seed": 1}, checkpoint_minutes=0.002,
                       base={**TINY_BASE, "max_duration": 3})
    out = tmp_path / "run"
    # the driver in this process: only the ranks' processes die
    code, stdout, stderr = call_cli(capsys, "search", str(path), "--out", str(out), "--no-report", "--plugin", faults,
                                    *shared_ray_here.args)
    assert code == 0, stdout + stderr
    assert (tmp_path / "struck0").exists() and (tmp_path / "struck1").exists()  # both faults did strike
    # 1) two ranks a trial
    header = next(line for line in stdout.splitlines() if "search tiny:" in line)
    assert header.endswith("each trial: 2 data-parallel workers, each 1 CPU, no GPU (the cluster has none)"), header
    meta = json.loads((out / "run.json").read_text())
    assert meta["trial_resources"]["workers"] == 2
    trials = load_run_study(out).get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE"] * 3, [t.user_attrs for t in trials]
    assert [t.params["batch_size"] for t in trials] == [64, 64, 32]
    for t in trials:
        a = t.user_attrs
        assert a["workers"] == 2 and a["worker_nodes"] == ["127.0.0.2"] * 2 and a["worker_gpu_ids"] == [[], []]
        # one worker, same recipes, 2 epochs: 0.24 (budget 0.5) and 0.54 (budget 1); chance is 0.1
        assert (0.15 if t.params["budget"] == 0.5 else 0.4) < a["accuracy"] <= 1
        assert 0 < a["train_seconds"] <= a["wall_seconds"]
    # 2) the peer that died before the group formed
    a = trials[0].user_attrs
    assert a[st.RETRIES] == 1 and a["retry_reason"] == "worker lost: rank 1 of 2: its process died (WorkerCrashedError)"
    assert "running it again (retry 1)" in stdout
    # 3) the peer killed after a checkpoint: on from it
    a = trials[1].user_attrs
    assert a[st.RETRIES] == 1 and a["retry_reason"].startswith("worker lost: rank 1 of 2"), a
    assert a["resumes"] == 1 and a["checkpoints"] >= 1 and a["resume_gap_seconds"] > 0, a
    assert not any("not resumed" in w or "without checkpoints" in w for w in a.get("warnings", "").split("; ")), a
    whole = run_ranks({"kind": "whole", "recipe_json": a["recipe_json"]})[0]["result"]
    assert a["steps"] == whole["steps"]  # every step trained, none twice
    assert a["accuracy"] == whole["accuracy"]  # bit-identical to the run that was never cut
    assert st.RETRIES not in trials[2].user_attrs and "resumes" not in trials[2].user_attrs


@pytest.mark.ray
@pytest.mark.system
def test_each_worker_gets_its_own_gpu_and_rungs_stop_a_two_worker_trial(tmp_path, write_space, ray_env, capsys,
                                                                         load_run_study, trial_faults):
    """One Ray of this test's own (4 CPUs, 4 fake GPUs) for two searches of 2-worker trials (each a test with a
    Ray of its own before):

    1) rungs stop a two-worker trial: MO-ASHA on 2-worker trials (no GPU: ``gpus: 0``); the trial (rank 0) reports
       at rungs as one-worker trials do, and a stop ends both ranks at that step (the search completes, the
       stopped trial is PRUNED). Every rung report says the same time (the ``rung_time`` fault), so which trial is
       stopped is decided by accuracy alone, never by which ran faster.
    2) each worker gets its own GPU: this machine has none; the ``fake_cuda`` fault records Ray's assignment and
       trains on the CPU. ``gpus_per_worker: 1`` gives each of a trial's 2 workers a GPU of its own, and two trials
       at once use all four.
    """
    from recipesearch.engine.api import search

    faults = trial_faults({"kind": "fake_cuda"},
                          {"kind": "hold", "folder": str(tmp_path / "hold"), "parties": 2, "timeout": 180})
    rung_time = trial_faults({"kind": "rung_time", "seconds_per_rung": 1.0})
    _ray(4, gpus=4, plugins=[tmp_path / f"{faults}.py", tmp_path / f"{rung_time}.py"])

    # 1) rungs stop a two-worker trial. Two recipes besides the baseline's (the rest repeat one of the three, answered
    # at once): LR 0.2, then LR 1e-5 (the random sampler's seed 6 and one trial at a time fix that order; as in
    # test_scheduler.py's test_ray_stops_a_pruned_trials_worker). With the rung times tied, the 1e-5 trial, at chance,
    # is dominated at its first rung by construction.
    path = write_space("rungs.yaml", trials=8, concurrency=1, budgets=[1],
                       resources={"cpus": 1, "workers": 2, "gpus": 0},
                       scheduler={"name": "moasha", "reduction_factor": 2, "min_fraction": 0.25},
                       sampler={"name": "random", "seed": 6}, algorithms={},
                       hparams={"optimizer.lr": {"choices": [0.2, 1.0e-5]}}, base={**_tiny_base(), "max_duration": 4})
    out = tmp_path / "rungs"
    search(path, out=out, quiet=True, report=False, plugins=[rung_time])
    trials = load_run_study(out).get_trials()
    states = [t.state.name for t in trials]
    assert len(trials) == 8 and set(states) <= {"COMPLETE", "PRUNED"}, [(t.state, t.user_attrs) for t in trials]
    # a repeated proposal (PRUNED with duplicate_of) was never trained
    stopped = [t for t in trials if t.state.name == "PRUNED" and "duplicate_of" not in t.user_attrs]
    assert [t.params["optimizer.lr"] for t in stopped] == [1.0e-5], states
    assert stopped[0].user_attrs["workers"] == 2 and stopped[0].user_attrs["pruned_at"] == 0.25, stopped[0].user_attrs

    # 2) a GPU per worker
    path = write_space("gpus.yaml", trials=2, concurrency=2, budgets=[1],
                       resources={"cpus": 1, "workers": 2, "gpus_per_worker": 1},
                       algorithms={}, base={**_tiny_base(), "device": "auto"})
    out = tmp_path / "gpus"
    capsys.readouterr()  # the first search's output
    search(path, out=out, report=False, plugins=[faults])
    header = next(line for line in capsys.readouterr().out.splitlines() if "search tiny:" in line)
    assert header.endswith("each trial: 2 data-parallel workers, each 1 CPU, 1 GPU (the cluster has 4 GPUs)"), header
    trials = load_run_study(out).get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE"], [t.user_attrs for t in trials]
    ids = [t.user_attrs["worker_gpu_ids"] for t in trials]
    for per_rank in ids:
        assert all(len(g) == 1 for g in per_rank) and len({g[0] for g in per_rank}) == 2, ids
    # the hold made both trials run at once: four distinct GPUs between them
    assert len({g[0] for per_rank in ids for g in per_rank}) == 4, ids


def _tiny_base():
    from tests.engine.conftest import TINY_BASE

    return dict(TINY_BASE)
