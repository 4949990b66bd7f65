"""Search-space files: validation (field + line), define-by-run sampling, recipes, baselines, hash."""
from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml

from recipesearch.algorithms import list_algorithms
from recipesearch.algorithms.interactions import forbidden_pairs
from recipesearch.errors import ConfigError
from recipesearch.recipe import recipe_from_dict
from recipesearch.space import SearchSpace, load_space, loads_space, params_key

optuna.logging.set_verbosity(optuna.logging.WARNING)

ROOT = Path(__file__).resolve().parents[1]
NEEDED = {"label_smoothing", "mixup", "cutmix", "sam", "ema", "channels_last"}  # the algorithms SPACE names

# Line numbers matter: the malformed cases below replace one line of this text and expect that line.
SPACE = """\
name: tiny <b>&</b>
base:
  model: {name: cnn, width: 8}
  data: {name: digits}
  optimizer: {name: sgd, lr: 0.05, momentum: 0.9, weight_decay: 5.0e-4}
  schedule: {name: cosine, warmup_epochs: 0.2}
  max_duration: 2
  batch_size: 64
  device: cpu
budgets: [0.25, 0.5, 1, 2]
objectives: [accuracy, train_seconds]
metric_split: test
constraints: {accuracy_min: 0.5, train_seconds_max: 30}
sampler: {name: tpe, seed: 0, n_startup_trials: 5}
trials: 32
concurrency: 2
resources: {cpus: 1, gpus: 0}
seed: 3
hparams:
  optimizer.lr: {scale: [0.5, 2]}
  optimizer.weight_decay: {grid: [0.5, 0.71, 1, 1.41, 2]}
  batch_size: {grid: [0.5, 1, 2]}
  optimizer.momentum: 0.8
algorithms:
  channels_last: {}
  label_smoothing: {smoothing: {range: [0.05, 0.2]}}
  mixup: {alpha: {range: [0.1, 1.0]}}
  cutmix: {alpha: {range: [0.25, 1.0], log: true}}
  sam: {interval: {choices: [1, 2, 5, 10]}, rho: {scale: [0.5, 2]}}
  ema: {always: true, half_life: {grid: [0.5, 1, 2]}}
"""


def line_of(text: str, start: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(start))


def replace_line(start: str, new: str) -> tuple[str, int]:
    """SPACE with the line starting with ``start`` replaced, and that line's number."""
    n = line_of(SPACE, start)
    lines = SPACE.splitlines()
    lines[n - 1] = new
    return "\n".join(lines) + "\n", n


@pytest.fixture(scope="module")
def space() -> SearchSpace:
    return loads_space(SPACE, "tiny.yaml")


def run_random(space: SearchSpace, n: int, seed: int = 0) -> list[dict[str, Any]]:
    study = optuna.create_study(directions=space.directions, sampler=optuna.samplers.RandomSampler(seed))
    out = []
    for _ in range(n):
        trial = study.ask()
        params = space.suggest(trial)
        assert params == trial.params  # what suggest returns is what Optuna stores
        study.tell(trial, [0.5, 1.0, 1.0][: len(space.directions)])
        out.append(params)
    return out


# -- loading ----------------------------------------------------------------------------------------------
def test_the_algorithms_these_tests_use_are_registered() -> None:
    missing = NEEDED - set(list_algorithms())
    assert not missing, f"missing algorithms: {sorted(missing)}"


def test_loads_and_exposes_fields(space: SearchSpace) -> None:
    assert space.name == "tiny <b>&</b>"
    assert space.budgets == [0.25, 0.5, 1.0, 2.0]
    assert space.objectives == ["accuracy", "train_seconds"] and space.directions == ["maximize", "minimize"]
    assert space.metric_split == "test" and space.constraints == {"accuracy_min": 0.5, "train_seconds_max": 30.0}
    assert (space.sampler.name, space.sampler.seed, space.sampler.options) == ("tpe", 0, {"n_startup_trials": 5})
    assert (space.trials, space.concurrency, space.seed) == (32, 2, 3)
    assert (space.resources.cpus, space.resources.gpus, space.threads_per_trial) == (1.0, 0.0, 1)
    assert space.price_per_hour is None and space.cost(3600) is None
    assert space.text == SPACE and space.path is None
    assert len(space.hash) == 12 and int(space.hash, 16) >= 0
    assert space.base.optimizer.lr == 0.05


def test_hash_is_stable_and_tracks_content(space: SearchSpace) -> None:
    assert loads_space(SPACE, "other.yaml").hash == space.hash
    assert loads_space(SPACE + "# a comment\n").hash == space.hash
    assert loads_space(SPACE.replace("name: tiny <b>&</b>", "name: renamed")).hash == space.hash
    assert loads_space(SPACE.replace("trials: 32", "trials: 33")).hash != space.hash
    assert loads_space(SPACE.replace("lr: 0.05", "lr: 0.06")).hash != space.hash


def test_load_space_resolves_base_relative_to_file(tmp_path: Path) -> None:
    (tmp_path / "recipes").mkdir()
    base = yaml.safe_load(SPACE)["base"]
    (tmp_path / "recipes" / "b.yaml").write_text(yaml.safe_dump(base))
    (tmp_path / "spaces").mkdir()
    text = "base: ../recipes/b.yaml\nbudgets: [1]\ntrials: 3\nhparams: {optimizer.lr: {scale: [0.5, 2]}}\n"
    (tmp_path / "spaces" / "s.yaml").write_text(text)
    s = load_space(tmp_path / "spaces" / "s.yaml")
    assert s.base.optimizer.lr == 0.05 and s.text == text and s.path == tmp_path / "spaces" / "s.yaml"
    assert s.name == "s" and s.threads_per_trial == 1 and s.sampler.name == "tpe"


def test_cost_objective_and_constraints_values() -> None:
    text = SPACE.replace("objectives: [accuracy, train_seconds]", "objectives: [accuracy, train_seconds, cost]")
    s = loads_space(text.replace("seed: 3", "seed: 3\nprice_per_hour: 2.5"))
    assert s.directions == ["maximize", "minimize", "minimize"]
    assert s.cost(3600) == pytest.approx(2.5)
    assert s.objective_values(0.9, 720) == pytest.approx([0.9, 720, 0.5])
    assert s.constraints_values(0.9, 10) == pytest.approx([0.5 - 0.9, 10 - 30])
    assert s.constraints_values(0.4, 40) == pytest.approx([0.1, 10])  # > 0: violated


MALFORMED = [
    # (line to replace, replacement, field named in the error, words in the message)
    ("concurrency:", "concurency: 2", "concurency", "unknown field"),
    ("trials:", "trials: many", "trials", "integer"),
    ("trials:", "trials: 2", "trials", "budgets"),
    ("budgets:", "budgets: 1", "budgets", "list"),
    ("budgets:", "budgets: [0.5, -1]", "budgets.1", "> 0"),
    ("  optimizer.lr:", "  optimizer.lr: {scale: [1, 1]}", "hparams.optimizer.lr.scale", "empty range"),
    ("  optimizer.lr:", "  optimizer.lr: {scale: []}", "hparams.optimizer.lr.scale", "[min, max]"),
    ("  optimizer.lr:", "  optimizer.lr: {scale: [2, 0.5]}", "hparams.optimizer.lr.scale", "min > max"),
    ("  optimizer.lr:", "  optimizer.lr: {scale: [0.5, x]}", "hparams.optimizer.lr.scale.1", "number"),
    ("  optimizer.lr:", "  optimizer.lr: {scale: [0.5, 2], step: 1}", "hparams.optimizer.lr.step", "unknown field"),
    ("  optimizer.lr:", "  optimizer.lr: {between: [0.5, 2]}", "hparams.optimizer.lr", "one of"),
    ("  optimizer.lr:", "  optimizer.lrr: {scale: [0.5, 2]}", "hparams.optimizer.lrr", "unknown recipe field"),
    ("  optimizer.lr:", "  budget: {grid: [1, 2]}", "hparams.budget", "search space itself"),
    ("  optimizer.momentum:", "  optimizer.momentum: {scale: [0.5, 2]}", "hparams.optimizer.momentum", "invalid"),
    ("  optimizer.weight_decay:", "  optimizer.weight_decay: {grid: []}", "hparams.optimizer.weight_decay.grid",
     "non-empty"),
    ("  optimizer.weight_decay:", "  optimizer.weight_decay: {grid: 2}", "hparams.optimizer.weight_decay.grid",
     "list"),
    ("  channels_last:", "  warp_drive: {}", "algorithms.warp_drive", "unknown algorithm"),
    ("  label_smoothing:", "  label_smoothing: {strength: {range: [0.05, 0.2]}}", "algorithms.label_smoothing.strength",
     "unknown hyperparameter"),
    ("  label_smoothing:", "  label_smoothing: {smoothing: {range: [0.2, 0.05]}}",
     "algorithms.label_smoothing.smoothing.range", "min > max"),
    ("  label_smoothing:", "  label_smoothing: {smoothing: {range: [0.1, 1.5]}}",
     "algorithms.label_smoothing.smoothing", "invalid"),
    ("  label_smoothing:", "  label_smoothing: [smoothing]", "algorithms.label_smoothing", "mapping"),
    ("  sam:", "  sam: {interval: {choices: []}}", "algorithms.sam.interval.choices", "non-empty"),
    ("  sam:", "  sam: {interval: {range: [1.5, 10]}}", "algorithms.sam.interval.range", "integer bounds"),
    ("  ema:", "  ema: {always: yes please}", "algorithms.ema.always", "true or false"),
    ("  mixup:", "  mixup: {always: true}", "algorithms.cutmix", "mixup is on in every trial"),
    ("objectives:", "objectives: [accuracy, train_seconds, cost]", "objectives", "price_per_hour"),
    ("objectives:", "objectives: [accuracy, speed]", "objectives.1", "unknown objective"),
    ("objectives:", "objectives: [accuracy]", "objectives", "train_seconds"),
    ("metric_split:", "metric_split: train", "metric_split", "allowed"),
    ("constraints:", "constraints: {accuracy_min: 1.5}", "constraints.accuracy_min", "fraction"),
    ("constraints:", "constraints: {accuracy_max: 0.5}", "constraints.accuracy_max", "unknown field"),
    ("constraints:", "constraints: {cost_max: 1}", "constraints.cost_max", "price_per_hour"),
    ("sampler:", "sampler: {name: cmaes}", "sampler.name", "unknown sampler"),
    ("sampler:", "sampler: {name: random, n_startup_trials: 3}", "sampler.n_startup_trials", "unknown field"),
    ("sampler:", "sampler: {name: nsga2, population_size: [1]}", "sampler.population_size", "number"),
    ("resources:", "resources: {cpus: 0}", "resources.cpus", "> 0"),
    ("resources:", "resources: {cpus: 1, tpus: 1}", "resources.tpus", "unknown field"),
    ("concurrency:", "concurrency: 0", "concurrency", ">= 1"),
    ("  optimizer: {name: sgd", "  optimizer: {name: sgd, lr: -1}", "base.optimizer.lr", "greater than 0"),
    ("  data:", "  data: {name: nope}", "base.data.name", "unknown dataset"),
]

# Where the error points when it is not the replaced line: the candidate that can never be switched on.
EXPECTED_LINE = {"algorithms.cutmix": line_of(SPACE, "  cutmix:")}


@pytest.mark.parametrize("start,new,field,words", MALFORMED, ids=[m[2] + ":" + m[3] for m in MALFORMED])
def test_malformed_spaces_name_field_and_line(start: str, new: str, field: str, words: str) -> None:
    text, line = replace_line(start, new)
    line = EXPECTED_LINE.get(field, line)
    with pytest.raises(ConfigError) as info:
        loads_space(text, "bad.yaml")
    err = info.value
    message = str(err)
    assert "\n" not in message
    assert err.field == field, message
    assert err.line == line, message
    assert message.startswith(f"bad.yaml:{line}: {field}: "), message
    assert words in err.message, message


def test_missing_base_and_not_a_mapping() -> None:
    with pytest.raises(ConfigError, match="base: missing"):
        loads_space("budgets: [1]\n", "s.yaml")
    with pytest.raises(ConfigError, match="mapping"):
        loads_space("- 1\n", "s.yaml")
    with pytest.raises(ConfigError, match="recipe file not found"):
        loads_space("base: nowhere.yaml\n", "s.yaml")


def test_two_always_on_algorithms_that_clash() -> None:
    text = SPACE.replace("  mixup: {alpha", "  mixup: {always: true, alpha")
    text = text.replace("  cutmix: {alpha", "  cutmix: {always: true, alpha")
    with pytest.raises(ConfigError) as info:
        loads_space(text, "bad.yaml")
    assert info.value.field == "algorithms.cutmix" and info.value.line == line_of(SPACE, "  cutmix:")
    assert "forbidden together with mixup" in info.value.message


def test_val_split_with_val_fraction() -> None:
    text = SPACE.replace("data: {name: digits}", "data: {name: digits, val_fraction: 0.2}")
    space = loads_space(text.replace("metric_split: test", "metric_split: val"))
    assert space.metric_split == "val" and space.base.data.val_fraction == 0.2


@pytest.mark.parametrize("entry,field,words", [
    ("baseline: {seeds: 0}", "baseline.seeds", ">= 1"),
    ("baseline: {seeds: 2.5}", "baseline.seeds", "integer"),
    ("baseline: {tune: true}", "baseline.tune", "unknown field"),
    ("confirm: {max_share: 1.5}", "confirm.max_share", "0.9"),
    ("confirm: {seeds: 1}", "confirm.seeds", "2"),
    ("confirm: maybe", "confirm", "mapping"),
    ("baseline: {seeds: 20}", "trials", "at least 80"),
    ("baseline: {seeds_elsewhere: 0}", "baseline.seeds_elsewhere", ">= 1"),
    ("target: 0.9\nbaseline: {seeds_elsewhere: 1}", "baseline.seeds_elsewhere", "needs target: baseline"),
])
def test_baseline_and_confirm_entries_are_checked(entry: str, field: str, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        loads_space(SPACE + entry + "\n", "bad.yaml")
    assert info.value.field == field and words in info.value.message, str(info.value)
    assert info.value.line is not None and "\n" not in str(info.value)


def test_tune_lr_needs_the_lr_among_the_hparams() -> None:
    text = SPACE.replace("metric_split: test\n", "") + "baseline: {tune_lr: true}\n"
    assert loads_space(text).lr_sweep()  # SPACE samples optimizer.lr
    without = "base: {model: {name: cnn}, data: {name: digits}, max_duration: 1}\nbaseline: {tune_lr: true}\n"
    with pytest.raises(ConfigError, match="needs hparams.optimizer.lr") as info:
        loads_space(without, "bad.yaml")
    assert info.value.field == "baseline.tune_lr"


def test_validation_is_the_default_and_brings_its_split() -> None:
    # no metric_split and no val_fraction: the space selects on validation, 10 % of train held out
    space = loads_space(SPACE.replace("metric_split: test\n", ""))
    assert space.metric_split == "val" and space.base.data.val_fraction == 0.1
    assert loads_space(SPACE).base.data.val_fraction == 0.0  # selecting on test changes nothing


# -- suggest / recipe_for ---------------------------------------------------------------------------------
def test_suggest_conditional_params_and_forbidden_pairs(space: SearchSpace) -> None:
    seen_on: set[str] = set()
    names = set(space.param_names())
    for params in run_random(space, 150):
        assert set(params) <= names and "/" not in "".join(params)
        assert params["budget"] in space.budgets
        assert "alg.ema" not in params and "ema.half_life" in params  # always on: no switch
        on = set(space.algorithms_on(params))
        seen_on |= on
        for alg in ("channels_last", "label_smoothing", "mixup", "cutmix", "sam"):
            hps = [n for n in params if n.startswith(alg + ".")]
            if alg in on:
                assert params.get(f"alg.{alg}") is True
                assert hps == [p.name for p in space.algorithms[alg].params]
            else:
                assert hps == [] and params.get(f"alg.{alg}", False) is False
        for a, b in forbidden_pairs():
            assert not (a in on and b in on)
        if params.get("alg.mixup"):
            assert "alg.cutmix" not in params  # not even asked
    assert {"label_smoothing", "mixup", "cutmix", "sam", "channels_last", "ema"} <= seen_on


def test_recipe_for_applies_multipliers_and_values(space: SearchSpace) -> None:
    for params in run_random(space, 40, seed=1):
        recipe = space.recipe_for(params)
        assert recipe.optimizer.lr == pytest.approx(0.05 * params["optimizer.lr"])
        assert recipe.optimizer.weight_decay == pytest.approx(5e-4 * params["optimizer.weight_decay"])
        assert recipe.batch_size == round(64 * params["batch_size"]) and isinstance(recipe.batch_size, int)
        assert recipe.optimizer.momentum == 0.8  # fixed value
        assert recipe.budget == params["budget"] and recipe.seed == 3 and recipe.threads == 1
        assert sorted(recipe.algorithms) == space.algorithms_on(params)
        assert recipe.algorithms["ema"]["half_life"] == pytest.approx(0.01 * params["ema.half_life"])
        if params.get("alg.sam"):
            assert recipe.algorithms["sam"]["interval"] == params["sam.interval"]
            assert recipe.algorithms["sam"]["rho"] == pytest.approx(0.05 * params["sam.rho"])
        if params.get("alg.label_smoothing"):
            assert recipe.algorithms["label_smoothing"] == {"smoothing": params["label_smoothing.smoothing"]}
        assert recipe_from_dict(recipe.to_dict()).id() == recipe.id()


def test_recipe_for_rejects_bad_params(space: SearchSpace) -> None:
    good = space.baseline_params(1.0)
    with pytest.raises(ConfigError, match="unknown parameter"):
        space.recipe_for({**good, "optimizer.lrr": 1.0})
    with pytest.raises(ConfigError, match="missing parameter"):
        space.recipe_for({k: v for k, v in good.items() if k != "optimizer.lr"})
    with pytest.raises(ConfigError, match="missing parameter"):
        space.recipe_for({**good, "alg.mixup": True})  # on without its alpha
    with pytest.raises(ConfigError, match="is off"):
        space.recipe_for({**good, "mixup.alpha": 0.2})
    with pytest.raises(ConfigError, match="cutmix"):
        space.recipe_for({**good, "alg.mixup": True, "mixup.alpha": 0.2, "alg.cutmix": True, "cutmix.alpha": 0.5})
    with pytest.raises(ConfigError, match="lr"):
        space.recipe_for({**good, "optimizer.lr": -1.0})


# -- baselines --------------------------------------------------------------------------------------------
def test_baseline_params_reproduce_the_base(space: SearchSpace) -> None:
    base = space.base.model_copy(update={"seed": 3, "threads": 1})
    assert [b["budget"] for b in space.baselines()] == space.budgets
    for budget in space.budgets:
        params = space.baseline_params(budget)
        assert params["optimizer.lr"] == 1.0 and params["batch_size"] == 1.0
        assert not any(v is True for k, v in params.items() if k.startswith("alg."))
        assert space.is_baseline(params)
        recipe = space.recipe_for(params)
        expected = recipe_from_dict(
            {**base.to_dict(), "budget": budget, "optimizer": {**base.optimizer.model_dump(), "momentum": 0.8},
             "algorithms": {"ema": {"half_life": 0.01}}}
        )
        assert recipe.id() == expected.id()
        # A FixedTrial walks the same path and gives the same dict.
        assert space.suggest(optuna.trial.FixedTrial(params)) == params
    assert not space.is_baseline({**space.baseline_params(1.0), "optimizer.lr": 1.41})
    assert not space.is_baseline({**space.baseline_params(1.0), "budget": 3.0})


def test_baseline_of_plain_space_has_the_base_recipe_id() -> None:
    text = "\n".join(line for line in SPACE.splitlines() if "momentum: 0.8" not in line and "ema:" not in line)
    s = loads_space(text + "\n")
    base = s.base.model_copy(update={"seed": 3, "threads": 1})
    for budget in s.budgets:
        assert s.recipe_for(s.baseline_params(budget)).id() == base.model_copy(update={"budget": budget}).id()


def test_baselines_enqueue_even_off_grid() -> None:
    """A grid without 1.0 gets 1.0 added (Optuna refuses enqueued categoricals outside the choices);
    a scale range without 1.0 keeps its bounds (Optuna accepts the enqueued value with a warning)."""
    text = SPACE.replace("grid: [0.5, 0.71, 1, 1.41, 2]", "grid: [0.5, 2]")
    text = text.replace("scale: [0.5, 2]}", "scale: [1.2, 2]}")
    s = loads_space(text)
    wd = next(p for p in s.hparams if p.name == "optimizer.weight_decay")
    assert wd.choices == (0.5, 2.0, 1.0)
    study = optuna.create_study(directions=s.directions, sampler=optuna.samplers.TPESampler(seed=0))
    for params in s.baselines():
        study.enqueue_trial(params)
    for expected in s.baselines():
        trial = study.ask()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert s.suggest(trial) == expected
        study.tell(trial, [0.9, 1.0])


def test_candidate_in_base_is_on_in_the_baseline() -> None:
    text = SPACE.replace("  device: cpu", "  device: cpu\n  algorithms: {label_smoothing: {smoothing: 0.12}}")
    s = loads_space(text)
    params = s.baseline_params(1.0)
    assert params["alg.label_smoothing"] is True and params["label_smoothing.smoothing"] == 0.12
    assert s.recipe_for(params).algorithms["label_smoothing"] == {"smoothing": 0.12}
    off = s.complete({**params, "alg.label_smoothing": False})
    assert "label_smoothing" not in s.recipe_for(off).algorithms


def test_complete_fills_a_switched_on_algorithm_in_space(space: SearchSpace) -> None:
    params = space.complete({**space.baseline_params(1.0), "alg.sam": True, "alg.mixup": True})
    assert params["sam.interval"] == 1 and params["sam.rho"] == 1.0 and params["mixup.alpha"] == 0.2
    assert "alg.cutmix" not in params  # mixup is on, so cutmix is not asked
    space.recipe_for(params)
    assert params_key(params) == params_key(dict(reversed(list(params.items()))))


# -- shipped spaces ---------------------------------------------------------------------------------------
SHIPPED = sorted((ROOT / "search_spaces").glob("*.yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_spaces_load(path: Path) -> None:
    s = load_space(path)  # a base recipe file it names must exist
    assert s.budgets and s.trials >= len(s.budgets) and "accuracy" in s.objectives
    for params in run_random(s, 20):
        s.recipe_for(params)
    for budget in s.budgets:
        assert math.isclose(s.recipe_for(s.baseline_params(budget)).budget, budget)


def test_digits_space_is_the_embedded_default() -> None:
    s = load_space(ROOT / "search_spaces" / "digits.yaml")
    assert s.trials >= 24 and s.concurrency == 2 and s.threads_per_trial == 1
    assert s.budgets == [0.25, 0.5, 1.0] and s.directions == ["maximize", "minimize"]
    # the demo's plan (benchmarks §13): a search budget, the probe, a second look for undecided candidates
    assert s.search_budget == 30 and s.confirm.paired_baseline == "probe" and s.confirm.sequential


def test_with_checkpoint_minutes_changes_only_the_copy(space: SearchSpace) -> None:
    off = space.with_checkpoint_minutes(0)
    assert off.checkpoint_minutes is None and off.execution.checkpoint_minutes is None
    assert space.checkpoint_minutes == 10.0 and off.hash == space.hash and off.trials == space.trials
