"""Per-trial resources that follow the hardware: ``resources: auto``, --cpus-per-trial / --gpus-per-trial, the
run header, and trials on the GPU Ray assigned them (fake GPUs on this GPU-less machine: the ``fake_cuda`` fault
of ``tests/engine/trial_faults.py``)."""
from __future__ import annotations

import json
from datetime import datetime

import pytest
import yaml

from recipesearch.engine.search_options import SearchOptions, resources_of
from recipesearch.engine.trainable import trial_device
from recipesearch.errors import ConfigError, UserError
from recipesearch.space import Resources, loads_space, resolve_resources
from tests.conftest import call_cli

# One epoch of digits with a width-8 CNN (~0.3 s on one thread); device auto: the trial takes what Ray gave it.
BASE = {"model": {"name": "cnn", "width": 8}, "data": {"name": "digits"},
        "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9}, "max_duration": 1, "batch_size": 64,
        "device": "auto"}


def _resources_of(text: str):
    head = {"name": "tiny", "base": BASE, "budgets": [1], "trials": 2, "baseline": {"seeds": 1}, "confirm": False}
    return loads_space(yaml.safe_dump(head, sort_keys=False) + text, source="tiny.yaml")


# -- the space file ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "cpus", "gpus"), [
    ("", 1.0, "auto"),                                    # the default
    ("resources: auto\n", 1.0, "auto"),
    ("resources: {cpus: 2}\n", 2.0, "auto"),              # auto inside a mapping too
    ("resources: {cpus: 1, gpus: auto}\n", 1.0, "auto"),
    ("resources: {cpus: 1, gpus: 0.5}\n", 1.0, 0.5),
    ("resources: {cpus: 4, gpus: 2}\n", 4.0, 2.0),
    ("resources: {cpus: 1, gpus: 0}\n", 1.0, 0.0),
])
def test_resources_auto_or_a_mapping(text, cpus, gpus):
    space = _resources_of(text)
    assert (space.resources.cpus, space.resources.gpus) == (cpus, gpus)


@pytest.mark.parametrize(("text", "field", "words"), [
    ("resources: {gpus: -1}\n", "resources.gpus", "must be auto or a number of GPUs >= 0"),
    ("resources: {gpus: lots}\n", "resources.gpus", "got 'lots'"),
    ("resources: {gpus: true}\n", "resources.gpus", "got True"),
    ("resources: {gpus: 1.5}\n", "resources.gpus", "a fraction of one GPU or whole GPUs"),
    ("resources: {cpus: 0}\n", "resources.cpus", "> 0"),
    ("resources: {cpus: 1, tpus: 1}\n", "resources.tpus", "unknown field"),
    ("resources: many\n", "resources", "must be auto or a mapping"),
])
def test_bad_resources_are_one_line(text, field, words):
    with pytest.raises(ConfigError) as info:
        _resources_of(text)
    assert info.value.field == field and words in info.value.message
    assert "\n" not in str(info.value)


def test_auto_stays_literal_in_the_hash():
    auto = _resources_of("resources: auto\n")
    assert auto.hash == _resources_of("").hash == _resources_of("resources: {cpus: 1, gpus: auto}\n").hash
    assert '"gpus":"auto"' in auto._canonical()
    zero = _resources_of("resources: {cpus: 1, gpus: 0}\n")
    assert zero.hash != auto.hash and '"resources":{"cpus":1.0,"gpus":0.0}' in zero._canonical()


# -- auto, resolved: a pure function of (cluster GPUs, resources, base device) --------------------------------


@pytest.mark.parametrize(("cluster", "gpus", "device", "expected"), [
    (4, "auto", "auto", 1.0),
    (1, "auto", "cuda", 1.0),
    (0, "auto", "auto", 0.0),
    (4, "auto", "cpu", 0.0),    # the base recipe insists on the CPU
    (0.5, "auto", "auto", 0.0),  # no whole GPU anywhere
    (4, 0.5, "auto", 0.5),      # numbers as asked
    (4, 0.0, "auto", 0.0),
    (8, 2.0, "cpu", 2.0),
])
def test_auto_resolution(cluster, gpus, device, expected):
    shape = resolve_resources(Resources(cpus=1, gpus=gpus), cluster, device)
    assert shape.gpus == expected and shape.cpus == 1.0 and shape.auto == (gpus == "auto")


def test_the_header_says_what_each_trial_gets():
    def say(cluster, gpus, device="auto", cpus=1.0):
        return resolve_resources(Resources(cpus=cpus, gpus=gpus), cluster, device).describe()

    assert say(4, "auto") == "each trial: 1 CPU, 1 GPU (auto: the cluster has 4 GPUs)"
    assert say(0, "auto") == "each trial: 1 CPU, no GPU (the cluster has none)"
    assert say(1, "auto", "cpu", 2) == ("each trial: 2 CPUs, no GPU (auto: the base recipe's device is cpu; "
                                        "the cluster has 1 GPU)")
    assert say(4, 0.5) == "each trial: 1 CPU, 0.5 GPU (2 trials per GPU; the cluster has 4 GPUs)"
    assert say(4, 0.0) == "each trial: 1 CPU, no GPU (resources.gpus: 0; the cluster has 4 GPUs)"
    assert resolve_resources(Resources(1, "auto"), 4, "auto").as_dict() == {
        "cpus": 1.0, "gpus": 1.0, "gpus_asked": "auto", "cluster_gpus": 4.0}


def test_the_trial_trains_on_what_ray_assigned():
    assert trial_device("auto", [2]) == "cuda"  # Ray's CUDA_VISIBLE_DEVICES makes "cuda" the assigned GPU
    assert trial_device("auto", []) == "cpu"
    assert trial_device("cpu", [0]) == "cpu" and trial_device("cuda", []) == "cuda"  # explicit: as written


# -- overrides: --cpus-per-trial / --gpus-per-trial, and the Python API --------------------------------------


def test_overrides_replace_the_space_values(tmp_path, make_space):
    space = make_space(resources={"cpus": 2, "gpus": 0})
    assert resources_of(space, SearchOptions(out=tmp_path)) == Resources(2.0, 0.0)
    assert resources_of(space, SearchOptions(out=tmp_path, gpus_per_trial="auto")) == Resources(2.0, "auto")
    assert resources_of(space, SearchOptions(out=tmp_path, cpus_per_trial=1, gpus_per_trial=0.5)) == Resources(1, 0.5)
    assert space.resources == Resources(2.0, 0.0)  # the space (and its hash) stay as written


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"gpus_per_trial": -1}, "--gpus-per-trial: must be auto or a number"),
    ({"gpus_per_trial": "lots"}, "--gpus-per-trial: must be auto or a number"),
    ({"cpus_per_trial": 0}, "--cpus-per-trial must be a number > 0"),
])
def test_bad_overrides_through_the_api_write_nothing(tmp_path, write_space, kwargs, words):
    from recipesearch.engine.api import search

    out = tmp_path / "run"
    with pytest.raises(UserError, match=words):
        search(write_space(), out=out, quiet=True, report=False, **kwargs)
    assert not out.exists()


def test_bad_overrides_on_the_command_line(tmp_path, write_space, capsys):
    for flag, value, words in (("--gpus-per-trial", "x", "must be auto or a number of GPUs"),
                               ("--gpus-per-trial", "1.5", "a fraction of one GPU or whole GPUs"),
                               ("--cpus-per-trial", "0", "must be a number > 0")):
        code, _, err = call_cli(capsys, "search", str(write_space()), "--out", str(tmp_path / "run"), flag, value)
        assert code == 2, err
        assert err.count("\n") == 1 and words in err and flag in err
    assert not (tmp_path / "run").exists()


# -- on Ray with fake GPUs ----------------------------------------------------------------------------------


def _header(out: str) -> str:
    """The run header: the first line of the search's own output."""
    return next(line for line in out.splitlines() if "search tiny:" in line)


def _intervals(trials):
    return [(t.datetime_start, t.datetime_complete) for t in trials]


def _most_at_once(spans: list[tuple[datetime, datetime]]) -> int:
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans], key=lambda e: (e[0], e[1]))
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


@pytest.mark.ray
@pytest.mark.system
def test_fractional_gpus_pack_trials_and_auto_takes_one(tmp_path, write_space, ray_env, capsys, load_run_study,
                                                        trial_faults):
    """Ray with 2 fake GPUs and 4 CPUs: ``gpus: 0.5`` runs 4 trials at once, two per GPU, each on the GPU Ray
    assigned it; then ``--gpus-per-trial auto`` gives each trial a whole GPU.

    Two GPUs tell packing from its failures as well as four (a whole GPU a trial would run only 2 at once, no
    GPU would leave the ids empty), with half as many trial workers to start on this 2-core machine."""
    import ray

    from recipesearch.engine.api import search

    # record "cuda" and Ray's ids, train on the CPU; every trial waits (at most 60 s) until all 4 have started:
    # they surely overlap if Ray lets them
    faults = trial_faults({"kind": "fake_cuda"},
                          {"kind": "hold", "folder": str(tmp_path / "hold"), "parties": 4, "timeout": 180})
    # the test's own Ray: the search cannot give it a runtime_env, so the plugin file is shipped here
    ray.init(num_cpus=4, num_gpus=2, _node_ip_address="127.0.0.2", include_dashboard=False, log_to_driver=False,
             runtime_env={"py_modules": [str(tmp_path / f"{faults}.py")]})
    path = write_space(base=BASE, budgets=[1], trials=4, concurrency=4, resources={"cpus": 1, "gpus": 0.5},
                       algorithms={})
    out = tmp_path / "packed"
    search(path, out=out, quiet=True, report=False, plugins=[faults])
    header = _header(capsys.readouterr().out)
    assert header.endswith("each trial: 1 CPU, 0.5 GPU (2 trials per GPU; the cluster has 2 GPUs)"), header
    meta = json.loads((out / "run.json").read_text())
    assert meta["trial_resources"] == {"cpus": 1.0, "gpus": 0.5, "gpus_asked": 0.5, "cluster_gpus": 2.0}

    trials = load_run_study(out).get_trials()
    assert len(trials) == 4 and {t.state.name for t in trials} == {"COMPLETE"}
    assert _most_at_once(_intervals(trials)) == 4  # all 4 at once (the hold makes sure they overlap)
    for t in trials:
        ids = t.user_attrs["gpu_ids"]
        assert len(ids) == 1 and set(ids) <= {0, 1}, ids
        assert t.user_attrs["assigned_device"] == "cuda"  # device auto + a GPU from Ray: cuda
    for gpu in range(2):  # at most two trials on one GPU at any time
        sharing = [t for t in trials if t.user_attrs["gpu_ids"] == [gpu]]
        assert _most_at_once(_intervals(sharing)) <= 2, gpu

    # auto on a cluster with GPUs: one whole GPU a trial (--gpus-per-trial auto overrides the space's 0.5)
    out = tmp_path / "auto"
    search(path, out=out, quiet=True, report=False, trials=2, concurrency=2, gpus_per_trial="auto",
           plugins=[faults])
    header = _header(capsys.readouterr().out)
    assert header.endswith("each trial: 1 CPU, 1 GPU (auto: the cluster has 2 GPUs)"), header
    assert json.loads((out / "run.json").read_text())["trial_resources"]["gpus"] == 1.0
    trials = load_run_study(out).get_trials()
    assert {t.state.name for t in trials} == {"COMPLETE"}
    ids = [t.user_attrs["gpu_ids"] for t in trials]
    assert all(len(i) == 1 and set(i) <= {0, 1} for i in ids), ids
    if _most_at_once(_intervals(trials)) == 2:
        assert ids[0] != ids[1]  # a whole GPU is never shared


@pytest.mark.ray
@pytest.mark.system
def test_auto_takes_no_gpu_on_a_cluster_without_one(tmp_path, write_space, shared_ray_here, capsys, load_run_study):
    """A Ray on this GPU-less machine (the session's shared one): ``resources: auto`` gives no GPU, and the trial
    trains on CPU."""
    from recipesearch.engine.api import search

    path = write_space(base=BASE, budgets=[1], trials=1,
                       concurrency=1, resources="auto", algorithms={})
    out = tmp_path / "run"
    search(path, out=out, quiet=True, report=False, address=shared_ray_here.address)
    header = _header(capsys.readouterr().out)
    assert header.endswith("each trial: 1 CPU, no GPU (the cluster has none)"), header
    assert json.loads((out / "run.json").read_text())["trial_resources"] == {
        "cpus": 1.0, "gpus": 0.0, "gpus_asked": "auto", "cluster_gpus": 0.0}
    (trial,) = load_run_study(out).get_trials()
    assert trial.state.name == "COMPLETE"
    assert trial.user_attrs["gpu_ids"] == [] and trial.user_attrs["assigned_device"] == "cpu"
