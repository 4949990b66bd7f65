"""A method named by import path (``algorithms: {"acme.tricks:Noise": {...}}``) and the Algorithm contract
checked on any class: static problems at resolution, a short reproducible run before a search trains it."""
from __future__ import annotations

import pytest

from recipesearch.algorithms import get_algorithm
from recipesearch.algorithms.contract import run_contract, static_problems
from recipesearch.errors import ConfigError
from recipesearch.train.loop import fit

METHODS = '''
import time

import torch
from pydantic import BaseModel, ConfigDict

from recipesearch.algorithms import Algorithm
from recipesearch.hooks.events import Event


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    std: float = 0.1


class Noise(Algorithm):
    name, description, citation = "noise", "input noise", "-"
    events = frozenset({Event.AFTER_DATALOADER})
    Params = Params

    def apply(self, event, state):
        g = torch.Generator().manual_seed(state.step)
        state.x = state.x + self.params.std * torch.randn(state.x.shape, generator=g)
        state.extra["noise_calls"] = state.extra.get("noise_calls", 0) + 1


class Unseeded(Noise):
    def apply(self, event, state):  # noise from the clock: two runs of one seed differ
        g = torch.Generator().manual_seed(time.perf_counter_ns())
        state.x = state.x + torch.randn(state.x.shape, generator=g)


class Never(Noise):
    def match(self, event, state):  # declares an event, then never acts on it
        return False


class Crashes(Noise):
    def apply(self, event, state):
        if state.step == 5:
            raise RuntimeError("shape mismatch in my trick")


class NoEvents(Noise):
    events = frozenset()


class NeedsValue(Noise):
    class Params(BaseModel):
        strength: float  # no default


class NotAnAlgorithm:
    pass
'''


@pytest.fixture
def mod(user_module):
    return user_module(METHODS)


def test_an_import_path_method_trains_with_its_params(mod, tiny_recipe):
    recipe = tiny_recipe({f"{mod}:Noise": {"std": 0.05}})
    result = fit(recipe)
    assert result.steps > 0 and 0 <= result.accuracy <= 1
    with pytest.raises(ConfigError) as info:
        tiny_recipe({f"{mod}:Noise": {"stdd": 0.05}})
    # the recipe's key, as written, not the class's own name
    assert info.value.field == f"algorithms.{mod}:Noise.stdd" and "unknown hyperparameter" in info.value.message


@pytest.mark.parametrize(("attr", "words"), [
    ("NotAnAlgorithm", "not a subclass of recipesearch.algorithms.Algorithm"),
    ("NoEvents", "`events` must be a non-empty set"),
    ("NeedsValue", "`Params()` must validate with its defaults"),
])
def test_static_contract_is_checked_when_the_path_resolves(mod, attr, words):
    with pytest.raises(ConfigError) as info:
        get_algorithm(f"{mod}:{attr}")
    assert info.value.field == f"algorithms.{mod}:{attr}" and words in info.value.message


def test_the_contract_run_finds_what_our_own_contract_tests_would(mod):
    assert run_contract(f"{mod}:Noise") == []
    assert run_contract(f"{mod}:Unseeded") == ["two runs of one seed gave different weights (not reproducible)"]
    assert run_contract(f"{mod}:Never") == ["apply never ran in a 22-step run (check `events` and `match`)"]
    assert run_contract(f"{mod}:Crashes") == ["a 22-step digits run failed: RuntimeError: shape mismatch in my trick"]


def test_our_own_methods_keep_the_static_contract():
    from recipesearch.algorithms import list_algorithms

    assert {name: static_problems(get_algorithm(name)) for name in list_algorithms()} == {
        name: [] for name in list_algorithms()}
