"""Contract tests over every registered algorithm: a newly registered method is covered without edits here.

Each method's hyperparameters validate, it trains bit-reproducibly in a short digits run, its hooks run
only at the events it declares, its metadata is filled in, and interactions.py names only real methods.
Measured on 2 CPU cores: the whole file runs in about 15 s (two ~0.2 s runs per algorithm).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import torch

import recipesearch.algorithms as algorithms_package
from recipesearch.algorithms import Algorithm, get_algorithm, list_algorithms
from recipesearch.algorithms.interactions import INTERACTIONS
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.recipe import Recipe
from recipesearch.train.loop import Trainer, TrainResult

ALGORITHMS = list_algorithms()

# A residual network, so stochastic depth has blocks to drop and blurpool has strided convolutions; half
# width keeps a step at ~10 ms on one thread.
CONTRACT_MODEL: dict[str, Any] = {"name": "resnet8", "width": 0.5}
CONTRACT_EPOCHS = 0.5  # 22 steps: enough for the schedule-driven methods (SWA, freezing) to switch on

# Where a method's literature defaults cannot run in the tiny run, the parameters it runs with instead.
CONTRACT_PARAMS: dict[str, dict[str, Any]] = {
    "squeeze_excite": {"min_channels": 8, "latent_channels": 4},  # default 128 exceeds resnet8's widths
    # Inductor's C++ code generation costs ~30 s on CPU (covered in test_torch_compile.py, marked slow);
    # the eager backend still runs TorchDynamo's graph capture.
    "torch_compile": {"backend": "eager"},
    "flip_tta": {"force": True},  # digits refuses a flip (it changes the label); the mechanics still run
    "alternating_flip": {"force": True},  # likewise
}
# Where resnet8 has nothing for a method to work on, the model it runs on instead.
CONTRACT_MODELS: dict[str, dict[str, Any]] = {
    "pool_before_norm": {"name": "cnn", "width": 8},  # resnet8 has no max-pool to move before its BN
}
# Every method is bit-reproducible on CPU (measured, bf16 autocast and torch.compile included). A method
# that cannot be must get an entry in a table of reasons here, checked like CONTRACT_PARAMS, not a skip.


def contract_recipe(make_recipe: Callable[..., Recipe], name: str) -> Recipe:
    return make_recipe({name: CONTRACT_PARAMS.get(name, {})}, model=CONTRACT_MODELS.get(name, CONTRACT_MODEL),
                       max_duration=CONTRACT_EPOCHS)


@dataclass(frozen=True)
class ContractRun:
    result: TrainResult
    weights: dict[str, torch.Tensor]  # state dict of the model that was evaluated
    apply_events: list[Event]  # one entry per call of the algorithm's ``apply``
    match_events: set[Event]  # every event at which the trainer asked ``match``


@contextmanager
def spy_on(cls: type[Algorithm]) -> Iterator[tuple[list[Event], list[Event]]]:
    """Record the event of every ``apply`` and ``match`` call on ``cls`` while the block runs."""
    applied: list[Event] = []
    matched: list[Event] = []
    original_apply, original_match = cls.apply, cls.match

    def apply(self: Algorithm, event: Event, state: Any) -> None:
        applied.append(event)
        original_apply(self, event, state)

    def match(self: Algorithm, event: Event, state: Any) -> bool:
        matched.append(event)
        return original_match(self, event, state)

    with mock.patch.object(cls, "apply", apply), mock.patch.object(cls, "match", match):
        yield applied, matched


def train(recipe: Recipe, cls: type[Algorithm]) -> ContractRun:
    with spy_on(cls) as (applied, matched):
        trainer = Trainer(recipe)
        result = trainer.fit()
    model = trainer.state.eval_model or trainer.state.model
    weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return ContractRun(result, weights, list(applied), set(matched))


@pytest.fixture(scope="module")
def runs() -> dict[str, list[ContractRun]]:
    """Cache: algorithm name -> its two same-seed runs, shared by the tests below."""
    return {}


def two_runs(name: str, make_recipe: Callable[..., Recipe], runs: dict[str, list[ContractRun]]) -> list[ContractRun]:
    if name not in runs:
        recipe = contract_recipe(make_recipe, name)
        runs[name] = [train(recipe, get_algorithm(name)) for _ in range(2)]
    return runs[name]


def test_per_algorithm_tables_name_registered_algorithms() -> None:
    # A renamed algorithm must fail here, not silently lose its settings and crash or pass elsewhere.
    assert set(CONTRACT_PARAMS) - set(ALGORITHMS) == set()
    assert set(CONTRACT_MODELS) - set(ALGORITHMS) == set()


def test_every_algorithm_module_registers_one_algorithm() -> None:
    # Every test below is parametrised over the registry, so a module that failed to register (or an empty
    # registry) would pass vacuously; the package's files are the independent list.
    package = Path(algorithms_package.__file__).parent
    infrastructure = {"base", "registry", "interactions", "contract"}
    modules = {p.stem for p in package.glob("*.py") if not p.stem.startswith("_")} - infrastructure
    registered = [get_algorithm(n).__module__.rsplit(".", 1)[-1] for n in ALGORITHMS]
    assert sorted(registered) == sorted(modules)


@pytest.mark.parametrize("name", ALGORITHMS)
def test_defaults_validate(name: str) -> None:
    cls = get_algorithm(name)
    defaults = cls.defaults()
    assert cls(**defaults).params.model_dump() == defaults
    assert cls().params == cls(**defaults).params


@pytest.mark.parametrize("name", ALGORITHMS)
def test_unknown_hyperparameter_is_a_one_line_config_error(name: str) -> None:
    with pytest.raises(ConfigError) as info:
        get_algorithm(name)(no_such_hyperparameter=1)
    assert info.value.field == f"algorithms.{name}.no_such_hyperparameter"
    assert "\n" not in str(info.value) and "unknown hyperparameter" in str(info.value)


@pytest.mark.parametrize("name", ALGORITHMS)
def test_metadata_is_filled_in(name: str) -> None:
    cls = get_algorithm(name)
    assert cls.name == name
    for text in (cls.description, cls.citation):
        assert isinstance(text, str) and text.strip() and "\n" not in text
    assert cls.events and all(isinstance(e, Event) for e in cls.events)
    assert isinstance(cls.order, int)
    module = cls.__module__.rsplit(".", 1)[-1]
    # Tests mirror the package: the method's own effect tests live beside this file.
    assert (Path(__file__).parent / f"test_{module}.py").is_file(), f"tests/algorithms/test_{module}.py is missing"


def test_interactions_name_registered_algorithms() -> None:
    names = {n for rule in INTERACTIONS for n in (rule.a, rule.b)}
    assert names - set(ALGORITHMS) == set()
    pairs = [frozenset((r.a, r.b)) for r in INTERACTIONS]
    assert all(len(p) == 2 for p in pairs) and len(set(pairs)) == len(pairs)  # no self-pairs, no duplicates
    assert all(rule.reason.strip() for rule in INTERACTIONS)


@pytest.mark.parametrize("name", ALGORITHMS)
def test_same_seed_gives_bit_identical_results(name: str, tiny_recipe, runs) -> None:
    first, second = two_runs(name, tiny_recipe, runs)
    a, b = first.result, second.result
    assert (a.accuracy, a.loss, a.steps, a.samples_seen) == (b.accuracy, b.loss, b.steps, b.samples_seen)
    assert a.steps == round(CONTRACT_EPOCHS * 44)  # 1438 // 32 = 44 steps per epoch
    assert first.weights.keys() == second.weights.keys()
    differing = [k for k in first.weights if not torch.equal(first.weights[k], second.weights[k])]
    assert differing == []


@pytest.mark.parametrize("name", ALGORITHMS)
def test_hooks_run_only_at_declared_events(name: str, tiny_recipe, runs) -> None:
    run = two_runs(name, tiny_recipe, runs)[0]
    cls = get_algorithm(name)
    assert run.apply_events, f"{name}.apply never ran in a {CONTRACT_EPOCHS}-epoch run"
    assert set(run.apply_events) <= cls.events
    # Every event fires in a run, so the trainer must have consulted the method at each one it declared.
    assert run.match_events == cls.events
