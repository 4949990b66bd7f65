"""The fault-injection point (engine/faults.py): hooks a test installs from outside, and nothing without them."""
from __future__ import annotations

import importlib

from recipesearch.engine import faults
from recipesearch.engine.trial import start_trial


def test_without_hooks_a_point_hands_back_the_config_itself():
    config = {"number": 3, "recipe": {"device": "cpu"}}
    assert faults.reach("start", config) is config


def test_hooks_see_each_point_and_may_change_the_config_at_start():
    seen = []

    def hook(point, config, info):
        seen.append((point, config["number"], info))
        return {**config, "recipe": {"device": "cpu"}} if point == "start" else None

    faults.install(hook)
    try:
        assert faults.reach("start", {"number": 1, "recipe": {"device": "cuda"}})["recipe"] == {"device": "cpu"}
        faults.reach("checkpoint", {"number": 1}, checkpoints=2)
    finally:
        faults.uninstall(hook)
    assert seen == [("start", 1, {}), ("checkpoint", 1, {"checkpoints": 2})]
    assert faults.reach("start", {"number": 1}) == {"number": 1}  # gone again


def test_a_test_plugin_installs_its_faults_on_import_and_they_leave_with_the_test(trial_faults, tmp_path,
                                                                                   monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))  # where a search would find it: beside the space file
    name = trial_faults({"kind": "fake_cuda"})
    module = importlib.import_module(name)
    assert start_trial({"number": 0, "recipe": {"device": "cuda"}})["recipe"]["device"] == "cpu"
    assert start_trial({"number": 0, "recipe": {"device": "cpu"}})["recipe"]["device"] == "cpu"
    module.uninstall()
    assert start_trial({"number": 0, "recipe": {"device": "cuda"}})["recipe"]["device"] == "cuda"


def test_user_code_that_does_not_install_is_the_trials_error():
    config = start_trial({"number": 0, "recipe": {}, "plugins": {"modules": ["surely_missing_xyz"]}})
    assert "surely_missing_xyz" in config["error"]


def test_a_trials_checkpoint_point_counts_its_own_checkpoints():
    seen = []

    def hook(point, config, info):
        seen.append((point, config["number"], info))

    faults.install(hook)
    try:
        first, second = faults.checkpoint_point({"number": 1}), faults.checkpoint_point({"number": 2})
        first("path", {"step": 3})  # the trainer's (path, info): ignored
        first()
        second()
    finally:
        faults.uninstall(hook)
    assert seen == [("checkpoint", 1, {"checkpoints": 1}), ("checkpoint", 1, {"checkpoints": 2}),
                    ("checkpoint", 2, {"checkpoints": 1})]
