"""Samplers for a space (Optuna's, seeded, with constraints) and the hand ``sweep`` strategy."""
from __future__ import annotations

import math
import warnings
from typing import Any

import optuna
import pytest

from recipesearch.algorithms import list_algorithms
from recipesearch.engine.samplers import (
    CONSTRAINTS_ATTR,
    SweepStrategy,
    is_sweep,
    ladder,
    make_sampler,
    neighbours,
    nsga2_population,
    record_constraints,
    switched,
)
from recipesearch.errors import ConfigError
from recipesearch.space import SAMPLER_OPTIONS, SearchSpace, loads_space, params_key

optuna.logging.set_verbosity(optuna.logging.WARNING)
NEEDED = {"label_smoothing", "mixup", "cutmix", "sam"}  # the algorithms BASE names


def test_the_algorithms_these_tests_use_are_registered() -> None:
    missing = NEEDED - set(list_algorithms())
    assert not missing, f"missing algorithms: {sorted(missing)}"

BASE = """\
base:
  model: {name: cnn, width: 8}
  data: {name: digits}
  optimizer: {name: sgd, lr: 0.05, momentum: 0.9, weight_decay: 5.0e-4}
  max_duration: 2
  batch_size: 64
  device: cpu
budgets: [0.5, 1, 2]
trials: 30
constraints: {accuracy_min: 0.8, train_seconds_max: 15}
hparams:
  optimizer.lr: {scale: [0.5, 2]}
  optimizer.weight_decay: {grid: [0.5, 1, 2]}
algorithms:
  label_smoothing: {smoothing: {range: [0.05, 0.2]}}
  mixup: {alpha: {range: [0.1, 1.0]}}
  cutmix: {alpha: {range: [0.25, 1.0]}}
  sam: {interval: {choices: [1, 2, 5, 10]}}
"""


def space_with(sampler: str) -> SearchSpace:
    return loads_space(BASE + f"sampler: {sampler}\n", "s.yaml")


# -- Optuna samplers --------------------------------------------------------------------------------------
SAMPLERS = [
    ("{name: tpe, seed: 1}", optuna.samplers.TPESampler),
    ("{name: nsga2, seed: 1, population_size: 8}", optuna.samplers.NSGAIISampler),
    ("{name: gp, seed: 1, n_startup_trials: 9}", optuna.samplers.GPSampler),
    ("{name: random, seed: 1}", optuna.samplers.RandomSampler),
    ("{name: sweep, seed: 1}", optuna.samplers.RandomSampler),
]


@pytest.mark.parametrize("how", ["user_attr", "set_constraint"])
@pytest.mark.parametrize("sampler,cls", SAMPLERS, ids=[s[0].split(",")[0][7:] for s in SAMPLERS])
def test_each_sampler_constructs_and_honours_constraints(sampler: str, cls: type, how: str) -> None:
    space = space_with(sampler)
    assert is_sweep(space) == sampler.startswith("{name: sweep")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no experimental/deprecation noise from construction
        made = make_sampler(space)
    assert type(made) is cls
    if cls is not optuna.samplers.RandomSampler:
        assert made._constraints_func is not None
    study = optuna.create_study(directions=space.directions, sampler=made)
    for _ in range(10):
        trial = study.ask()
        params = space.suggest(trial)
        acc = 0.95 - 0.2 * abs(math.log2(params["optimizer.lr"])) - 0.1 * params.get("alg.mixup", False)
        secs = 10 * params["budget"]
        if how == "user_attr":
            trial.set_user_attr(CONSTRAINTS_ATTR, space.constraints_values(acc, secs))
        else:
            record_constraints(trial, space, acc, secs)
        study.tell(trial, space.objective_values(acc, secs))
    for t in study.trials:
        values = list(t.constraints.values())
        if cls is optuna.samplers.RandomSampler and how == "user_attr":
            assert values == []  # random search ignores constraints; the report can still use the attr
            continue
        assert len(values) == 2
        assert values[1] == pytest.approx(10 * t.params["budget"] - 15)
    if cls is not optuna.samplers.RandomSampler:
        assert all(max(t.constraints.values()) <= 0 for t in study.best_trials)  # best = feasible only


def test_constraint_values(sweep_space: SearchSpace) -> None:
    assert sweep_space.constraint_dict(0.9, 10) == pytest.approx({"accuracy_min": -0.1, "train_seconds_max": -5})
    assert sweep_space.constraints_values(0.7, 20) == pytest.approx([0.1, 5])


def test_tpe_is_multivariate_grouped_and_seeded() -> None:
    space = space_with("{name: tpe, seed: 7, n_startup_trials: 3}")
    tpe = make_sampler(space)
    assert tpe._multivariate and tpe._group and tpe._n_startup_trials == 3

    def first_params() -> list[dict[str, Any]]:
        study = optuna.create_study(directions=space.directions, sampler=make_sampler(space))
        out = []
        for _ in range(6):
            trial = study.ask()
            out.append(space.suggest(trial))
            record_constraints(trial, space, 0.9, out[-1]["budget"])
            study.tell(trial, [0.9, out[-1]["budget"]])
        return out

    assert first_params() == first_params()


def test_sampler_options_are_real_constructor_arguments() -> None:
    import inspect

    samplers = optuna.samplers
    classes = {"tpe": samplers.TPESampler, "nsga2": samplers.NSGAIISampler, "gp": samplers.GPSampler}
    for name, cls in classes.items():
        assert set(SAMPLER_OPTIONS[name]) <= set(inspect.signature(cls).parameters)


def test_bad_sampler_option_value_is_a_config_error() -> None:
    # caught when the space is loaded, naming the option (Optuna would only say so when the sampler is built)
    with pytest.raises(ConfigError, match="sampler.population_size: must be >= 2"):
        space_with("{name: nsga2, population_size: 1}")


# -- the sweep strategy -----------------------------------------------------------------------------------
def objective(params: dict[str, Any]) -> tuple[float, float] | None:
    """A hand-made landscape: best lr 1.41x, wd 1x, label smoothing helps, mixup hurts, SAM fails at 1."""
    if params.get("alg.sam") and params["sam.interval"] == 1:
        return None  # "diverged"
    acc = 0.9 - 0.04 * (math.log2(params["optimizer.lr"]) - 0.5) ** 2
    acc -= 0.01 * abs(math.log2(params["optimizer.weight_decay"]))
    acc += 0.02 * params.get("alg.label_smoothing", False) - 0.03 * params.get("alg.mixup", False)
    acc += 0.01 * math.log2(params["budget"])
    secs = 10 * params["budget"] * (1.5 if params.get("alg.sam") else 1.0)
    return acc, secs


def evaluate(params: dict[str, Any]) -> dict[str, Any]:
    result = objective(params)
    if result is None:
        return {"params": params, "state": "FAIL", "accuracy": None, "train_seconds": None}
    return {"params": params, "state": "COMPLETE", "accuracy": result[0], "train_seconds": result[1]}


def run_sweep(space: SearchSpace, max_rounds: int = 200) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    sweep, history, batches = SweepStrategy(space), [], []
    for _ in range(max_rounds):
        batch = sweep.propose(history)
        if not batch:
            assert sweep.exhausted(history)
            return history, batches
        batches.append(batch)
        history += [evaluate(p) for p in batch]
    raise AssertionError("the sweep did not terminate")


@pytest.fixture(scope="module")
def sweep_space() -> SearchSpace:
    return space_with("{name: sweep, seed: 0}")


def test_ladders_and_neighbours(sweep_space: SearchSpace) -> None:
    lr, wd = sweep_space.hparams
    assert ladder(lr) == [0.5, 0.71, 1.0, 1.41, 2.0]
    assert neighbours(lr, 1.0, 1) == [0.71, 1.41] and neighbours(lr, 1.0, 2) == [0.5, 2.0]
    assert neighbours(lr, 2.0, 1) == [1.41] and neighbours(lr, 1.2, 1) == [1.0, 1.41]  # off-ladder value
    assert ladder(wd) == [0.5, 1.0, 2.0] and neighbours(wd, 1.0, 2) == []
    smoothing = sweep_space.algorithms["label_smoothing"].params[0]
    assert ladder(smoothing) == pytest.approx([0.05, 0.071, 0.1, 0.141, 0.2])  # default 0.1 x 0.5..2
    interval = sweep_space.algorithms["sam"].params[0]
    assert neighbours(interval, 2, 1) == [1, 5] and neighbours(interval, 1, 2) == [5]


def test_sweep_starts_with_baselines_then_neighbours(sweep_space: SearchSpace) -> None:
    history, batches = run_sweep(sweep_space)
    assert batches[0] == sweep_space.baselines()
    second = batches[1]
    assert {p["budget"] for p in second} == set(sweep_space.budgets)
    assert [p["budget"] for p in second[:3]] == sweep_space.budgets  # budgets interleaved
    base = sweep_space.baseline_params(1.0)
    at_one = [p for p in second if p["budget"] == 1.0]
    assert at_one == [
        {**base, "optimizer.lr": 0.71}, {**base, "optimizer.lr": 1.41},
        {**base, "optimizer.weight_decay": 0.5}, {**base, "optimizer.weight_decay": 2.0},
    ]


def test_sweep_never_repeats_keeps_improvements_and_terminates(sweep_space: SearchSpace) -> None:
    history, _ = run_sweep(sweep_space)
    keys = [params_key(h["params"]) for h in history]
    assert len(keys) == len(set(keys))
    sweep = SweepStrategy(sweep_space)
    for budget in sweep_space.budgets:
        best = sweep.incumbent(budget, history)
        assert best is not None
        # The landscape's optimum is reachable one move at a time: the sweep must end there.
        p = best["params"]
        assert p["optimizer.lr"] == 1.41 and p["optimizer.weight_decay"] == 1.0
        assert p["alg.label_smoothing"] and not p.get("alg.mixup") and not p.get("alg.sam")
        # Every move around the final incumbent was tried and none beat it.
        tried = {params_key(h["params"]): h for h in history}
        for stage in sweep.moves(p):
            for move in stage:
                h = tried[params_key(move)]
                if h["state"] != "FAIL":
                    assert (h["accuracy"], -h["train_seconds"]) <= (best["accuracy"], -best["train_seconds"])
    assert any(h["state"] == "FAIL" for h in history)  # SAM at interval 1 failed and was not retried


def test_sweep_is_deterministic(sweep_space: SearchSpace) -> None:
    first = [params_key(h["params"]) for h in run_sweep(sweep_space)[0]]
    second = [params_key(h["params"]) for h in run_sweep(space_with("{name: sweep, seed: 0}"))[0]]
    assert first == second


def test_sweep_waits_for_trials_in_flight(sweep_space: SearchSpace) -> None:
    sweep = SweepStrategy(sweep_space)
    history = [evaluate(p) for p in sweep.propose([])]
    batch = sweep.propose(history)
    running = [{**evaluate(p), "state": "RUNNING"} if p["budget"] == 1.0 else evaluate(p) for p in batch]
    following = sweep.propose(history + running)
    assert following and all(p["budget"] != 1.0 for p in following)  # budget 1 waits, others move on
    assert not sweep.exhausted(history + running)
    keys = {params_key(h["params"]) for h in history + running}
    assert not any(params_key(p) in keys for p in following)


def test_sweep_proposals_go_through_optuna(sweep_space: SearchSpace) -> None:
    """Proposals are complete params dicts: enqueued, Optuna asks exactly those values back."""
    sweep = SweepStrategy(sweep_space)
    history = [evaluate(p) for p in sweep.propose([])]
    proposals = sweep.propose(history) + [sweep_space.complete({**sweep_space.baseline_params(1.0), "alg.sam": True})]
    study = optuna.create_study(directions=sweep_space.directions, sampler=make_sampler(sweep_space))
    for p in proposals:
        study.enqueue_trial(p)
    for p in proposals:
        assert sweep_space.suggest(optuna.trial.FixedTrial(p)) == p
        trial = study.ask()
        assert sweep_space.suggest(trial) == p
        sweep_space.recipe_for(p)
        study.tell(trial, [0.9, 1.0])


def test_sweep_switches_algorithms_respecting_forbidden_pairs(sweep_space: SearchSpace) -> None:
    sweep = SweepStrategy(sweep_space)
    with_mixup = sweep_space.complete({**sweep_space.baseline_params(1.0), "alg.mixup": True})
    switches = sweep.moves(with_mixup)[2]
    assert all(not (p.get("alg.mixup") and p.get("alg.cutmix")) for p in switches)
    assert any(not p.get("alg.mixup") for p in switches)  # mixup switched off again
    for p in switches:
        sweep_space.recipe_for(p)


def test_nsga2_default_population_lets_a_short_search_evolve() -> None:
    # 50 (Optuna's default) would keep a 24-trial search inside NSGA-II's random first generation.
    assert nsga2_population(24, 4) == 8
    assert nsga2_population(120, 4) == 29
    assert nsga2_population(1000, 4) == 50
    sampler = make_sampler(space_with("{name: nsga2, seed: 1}"))
    assert sampler._population_size == 8  # 30 trials, 3 baselines: (30 - 3) // 4 = 6, raised to 8
    explicit = make_sampler(space_with("{name: nsga2, seed: 1, population_size: 20}"))
    assert explicit._population_size == 20


def test_switched_turns_each_optional_method_once_and_skips_a_forbidden_pair(make_space):
    space = make_space(algorithms={"label_smoothing": {"always": True}, "mixup": {"alpha": {"range": [0.1, 0.4]}},
                                   "cutmix": {}, "ema": {}})
    params = space.complete({"budget": 1.0, "alg.mixup": True, "mixup.alpha": 0.3})
    moves = dict(switched(params, space))
    # label smoothing is always on: never switched; cutmix with mixup on is a forbidden pair: not proposed
    assert list(moves) == ["without mixup", "with ema"]
    assert moves["without mixup"] == space.complete({"budget": 1.0})
    assert moves["with ema"] == space.complete({**params, "alg.ema": True})
    assert all(m["budget"] == 1.0 for m in moves.values())
