"""User code reaching trials (engine/shipping.py, engine/user_code.py, engine/failures.py): entries registered
in the driver travel pickled (by value from ``__main__``), what cannot travel or load is one line before any
trial, and a search whose trials all fail for one reason stops early."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading

import optuna
import pandas as pd
import pytest
from optuna.trial import TrialState

import recipesearch
from recipesearch.algorithms import registry as algorithm_registry
from recipesearch.data import registry as data_registry
from recipesearch.engine import shipping
from recipesearch.engine.failures import failing_alike
from recipesearch.errors import ConfigError, UserError
from recipesearch.models import registry as model_registry
from tests.engine.conftest import REPO, TINY_BASE


@pytest.fixture
def clean_registries():
    """Registries as they were before the test (a user's registrations are process-wide)."""
    saved = [(r, dict(r._REGISTRY)) for r in (model_registry, data_registry, algorithm_registry)]
    yield
    for registry, entries in saved:
        registry._REGISTRY.clear()
        registry._REGISTRY.update(entries)


def _main_namespace_model(name: str) -> None:
    """Register a model defined as a script's ``__main__`` would define it: not importable anywhere else."""
    namespace = {"__name__": "__main__"}
    exec(textwrap.dedent(f"""
        from torch import nn
        from recipesearch.models.registry import register_model

        HIDDEN = 5  # a global of the script: travels with the function

        @register_model({name!r})
        def scripted(num_classes, in_channels, image_size, hidden=HIDDEN):
            return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size ** 2, hidden),
                                 nn.Linear(hidden, num_classes))
        """), namespace)


def test_an_entry_registered_in_main_reaches_a_fresh_process(clean_registries, tmp_path):
    _main_namespace_model("scripted_net")
    shipment = shipping.collect()
    assert "scripted_net" in str(shipment.registered) or shipment.registered  # pickled by value
    payload = tmp_path / "payload.pkl"
    payload.write_bytes(shipment.registered)
    code = textwrap.dedent(f"""
        import pathlib, torch
        from recipesearch.engine.shipping import install
        from recipesearch.models import create_model
        install({{"modules": [], "registered": pathlib.Path({str(payload)!r}).read_bytes()}})
        model = create_model("scripted_net", num_classes=3, in_channels=1, image_size=4)
        print(model(torch.zeros(2, 1, 4, 4)).shape[1], model[1].out_features)
        """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["3", "5"]


def test_the_spaces_modules_travel_beside_registered_entries(clean_registries, user_module):
    # Once, the pickling check's loop variable replaced the modules named: registering anything dropped them.
    name = user_module("X = 1\n")
    _main_namespace_model("scripted_too")
    assert shipping.collect([name]).modules == (name,)


def test_an_entry_that_cannot_be_pickled_is_one_line_naming_it(clean_registries):
    lock = threading.Lock()

    @model_registry.register_model("locked_net")
    def locked(num_classes, in_channels, image_size):
        with lock:
            return None

    with pytest.raises(UserError, match=r"model 'locked_net' is registered in this process but cannot be sent"):
        shipping.collect()


def test_a_payload_that_does_not_load_is_a_user_error():
    with pytest.raises(UserError, match="do not load here"):
        shipping.install({"modules": [], "registered": b"not a pickle"})
    with pytest.raises(ConfigError, match="no such module"):
        shipping.install({"modules": ["surely_missing_user_module_xyz"], "registered": None})


def _failed(number: int, error: str, **attrs) -> optuna.trial.FrozenTrial:
    return optuna.trial.create_trial(state=TrialState.FAIL, user_attrs={"error": error, **attrs})


def test_failing_alike_needs_three_alike_and_nothing_completed():
    same = "invalid recipe: trial {}: model.name: acme:net raised ValueError: boom"
    trials = [_failed(n, same.format(n)) for n in range(3)]
    assert failing_alike(trials) == "invalid recipe: trial N: model.name: acme:net raised ValueError: boom"
    assert failing_alike(trials[:2]) is None
    assert failing_alike([*trials[:2], _failed(3, "diverged: loss is nan at step 4")]) is None
    assert failing_alike([*trials, optuna.trial.create_trial(state=TrialState.COMPLETE, values=[0.5, 1.0])]) is None
    lost = [_failed(n, "worker lost", worker_lost=True) for n in range(3)]
    assert failing_alike(lost) is None
    assert failing_alike([_failed(n, "interrupted") for n in range(3)]) is None


FAILS_IN_TRAINING = """
from torch import nn

class Net(nn.Sequential):
    def forward(self, x):
        if self.training:
            raise ValueError("this net cannot train")
        return super().forward(x)

def net(num_classes, in_channels, image_size):
    return Net(nn.Flatten(), nn.Linear(in_channels * image_size ** 2, num_classes))
"""


def test_a_search_whose_trials_all_fail_alike_stops_early(tmp_path, write_space, user_module, capsys):
    # Every check before training passes (the net builds, and classifies two images in eval mode); every trial
    # fails at its first training step, for one reason.
    name = user_module(FAILS_IN_TRAINING)
    space = write_space(trials=12, concurrency=1, base={**TINY_BASE, "model": {"name": f"{name}:net"}})
    result = recipesearch.search(space, out=tmp_path / "run", executor="inprocess", quiet=True, report=False)
    states = result.trials["state"].tolist()
    assert states == ["FAIL"] * 3  # not 12
    assert "this net cannot train" in result.trials["error"].iloc[0]
    assert "stopped early: the first 3 trials all failed the same way" in capsys.readouterr().out


BROKEN_METHOD = """
import time
import torch
from recipesearch.algorithms import Algorithm
from recipesearch.hooks.events import Event

class Shaky(Algorithm):
    name, description, citation = "shaky", "clock noise", "-"
    events = frozenset({Event.AFTER_DATALOADER})

    def apply(self, event, state):
        state.x = state.x + torch.randn(state.x.shape, generator=torch.Generator().manual_seed(time.perf_counter_ns()))
"""


def test_a_method_that_breaks_the_contract_is_refused_before_anything_is_written(tmp_path, write_space,
                                                                                  user_module):
    name = user_module(BROKEN_METHOD)
    space = write_space(algorithms={f"{name}:Shaky": {}})
    out = tmp_path / "run"
    with pytest.raises(ConfigError, match="breaks the Algorithm contract: two runs of one seed gave different"):
        recipesearch.search(space, out=out, executor="inprocess", quiet=True, report=False)
    assert not out.exists()


SCRIPT = """
import sys
import recipesearch
from recipesearch.models.registry import register_model
from torch import nn

@register_model("script_mlp")
def script_mlp(num_classes, in_channels, image_size, hidden: int = 16):
    return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size ** 2, hidden), nn.ReLU(),
                         nn.Linear(hidden, num_classes))

recipesearch.search(sys.argv[1], out=sys.argv[2], address=sys.argv[3], quiet=True, report=False)
"""


@pytest.mark.ray
@pytest.mark.system
def test_a_model_registered_in_a_script_trains_on_ray(tmp_path, write_space, shared_ray):
    # Before: every Ray trial failed "model.name: unknown model 'script_mlp'" (the driver alone had it).
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    space = write_space(trials=4, concurrency=1, base={**TINY_BASE, "model": {"name": "script_mlp"}})  # 1 worker
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, str(script), str(space), str(out), shared_ray.address], env=shared_ray.env,
                       capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    trials = pd.read_csv(out / "trials.csv")
    assert set(trials["state"]) <= {"COMPLETE", "PRUNED"} and (trials["state"] == "COMPLETE").sum() >= 2
    assert json.loads((out / "run.json").read_text())["user_code"] == []  # __main__: by value, no module


@pytest.mark.ray
def test_code_that_does_not_import_on_a_node_is_one_line_before_any_trial(shared_ray_here):
    import ray

    # on the session's shared Ray (head 127.0.0.2): a Ray start of its own would check nothing more
    ray.init(address=shared_ray_here.address, log_to_driver=False)
    try:
        shipping.check_nodes(shipping.Shipment(modules=("json",)))  # importable everywhere: no complaint
        with pytest.raises(UserError, match=r"user code does not load on Ray node 127\.0\.0\.2 \(.*cannot import "
                                            r"'surely_missing_user_module_xyz'"):
            shipping.check_nodes(shipping.Shipment(modules=("surely_missing_user_module_xyz",)))
    finally:
        ray.shutdown()  # only disconnects: the shared Ray stays up
