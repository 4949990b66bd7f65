"""The space file's schema: defaults, shorthands, and one-line errors (field + line) for the shapes that
pydantic checks. The older cases (tests/test_space.py MALFORMED) cover the rest."""
from __future__ import annotations

import pytest

from recipesearch.errors import ConfigError
from recipesearch.space import SpaceFile, loads_space

# Line numbers matter: each case replaces one line of this text and expects the error on that line.
TEXT = """\
base:
  model: {name: cnn, width: 8}
  data: {name: digits}
  optimizer: {name: sgd, lr: 0.05, momentum: 0.9}
  max_duration: 2
  batch_size: 64
  device: cpu
budgets: [0.5, 1]
trials: 8
sampler: {name: tpe, seed: 4}
resources: {cpus: 2}
constraints: {accuracy_min: 0.5}
hparams:
  optimizer.lr: {scale: [0.5, 2]}
  batch_size: {grid: [0.5, 1, 2]}
algorithms:
  mixup: {alpha: {range: [0.1, 1.0]}}
  sam: {interval: {choices: [1, 2, 5]}}
"""


def replaced(start: str, new: str) -> tuple[str, int]:
    lines = TEXT.splitlines()
    n = next(i for i, line in enumerate(lines, 1) if line.startswith(start))
    lines[n - 1] = new
    return "\n".join(lines) + "\n", n


MALFORMED = [
    # (line to replace, replacement, field named in the error, words in the message)
    ("budgets:", "budgets: [0.5, .nan]", "budgets.1", "finite number"),
    ("budgets:", "budgets: [1, 1.0]", "budgets.1", "listed twice"),
    ("trials:", "trials: null", "trials", "integer"),
    ("trials:", "3: 8", "3", "unknown field"),
    ("sampler:", "sampler: {name: tpe, seed: null}", "sampler.seed", "integer"),
    ("sampler:", "sampler:", "sampler", "mapping"),
    ("sampler:", "sampler: {name: tpe, n_startup_trials: x}", "sampler.n_startup_trials", "number or boolean"),
    ("sampler:", "threads_per_trial: null", "threads_per_trial", "integer"),
    ("resources:", "resources: {cpus: .inf}", "resources.cpus", "finite number"),
    ("resources:", "resources: {gpus: -1}", "resources.gpus", ">= 0"),
    ("constraints:", "constraints: {accuracy_min: null}", "constraints.accuracy_min", "number"),
    ("constraints:", "constraints: {train_seconds_max: 0}", "constraints.train_seconds_max", "> 0"),
    ("constraints:", "price_per_hour: 0", "price_per_hour", "> 0"),
    ("constraints:", "confirm: {early: 0.5}", "confirm.early", ">= 1"),
    ("constraints:", "confirm: {stop_at_claim: maybe}", "confirm.stop_at_claim", "true or false"),
    ("  optimizer.lr:", "  optimizer.lr: [0.5, 2]", "hparams.optimizer.lr", "a list is not a parameter"),
    ("  optimizer.lr:", "  optimizer.lr: {scale: [0.5, 2], grid: [1]}", "hparams.optimizer.lr", "only one of"),
    ("  optimizer.lr:", "  optimizer.lr: {scale: [0, 2]}", "hparams.optimizer.lr.scale", "log scale needs min > 0"),
    ("  optimizer.lr:", "  optimizer.lr: {scale: [-1, 2], log: false}", "hparams.optimizer.lr.scale",
     "multipliers must be > 0"),
    ("  optimizer.lr:", "  optimizer.lr: {scale: [0.5, 2], log: 3}", "hparams.optimizer.lr.log", "true or false"),
    ("  optimizer.lr:", "  optimizer.lr: {range: [0.01, 0.1], int: null}", "hparams.optimizer.lr.int",
     "true or false"),
    ("  optimizer.lr:", "  optimizer.lr: {range: [0, 0.1], log: true}", "hparams.optimizer.lr.range",
     "log scale needs min > 0"),
    ("  optimizer.lr:", "  optimizer.lr: {choices: [0.01, [1]]}", "hparams.optimizer.lr.choices.1",
     "numbers, text, booleans or null"),
    ("  optimizer.lr:", "  optimizer.lr: {choices: [0.01, 0.1, 0.01]}", "hparams.optimizer.lr.choices.2",
     "listed twice"),
    ("  optimizer.lr:", "  optimizer.name: {scale: [0.5, 2]}", "hparams.optimizer.name.scale",
     "nonzero numeric base value"),
    ("  optimizer.lr:", "  optimizer.name: {range: [1, 2]}", "hparams.optimizer.name.range", "need a number"),
    ("  optimizer.lr:", "  optimizer.name: {choices: [sgd, rmsprop]}", "hparams.optimizer.name", "'rmsprop' gives"),
    ("  optimizer.lr:", "  optimizer.lr: -1", "hparams.optimizer.lr", "the fixed value gives -1"),
    ("  optimizer.lr:", "  1: {scale: [0.5, 2]}", "hparams.1", "unknown recipe field"),
    ("  batch_size: {", "  batch_size: {grid: [0.5, 1], log: true}", "hparams.batch_size.log",
     "unknown field for a grid parameter (allowed: grid)"),
    ("  batch_size: {", "  batch_size: {grid: [0.5, 0]}", "hparams.batch_size.grid.1", "> 0"),
    ("  mixup:", "  mixup: 3", "algorithms.mixup", "mapping of hyperparameters"),
    ("  mixup:", "  mixup: {alpha: {range: [0.1, 1]}, always: 1}", "algorithms.mixup.always", "true or false"),
    # The hyperparameter's name is checked before its entry's shape.
    ("  sam:", "  sam: {interval: {range: [2, 1]}, rhoo: 1}", "algorithms.sam.rhoo", "unknown hyperparameter"),
    ("  sam:", "  sam: {interval: {range: [0, 10]}}", "algorithms.sam.interval", "the bound gives 0"),
]


@pytest.mark.parametrize("start,new,field,words", MALFORMED, ids=[m[2] + ":" + m[3] for m in MALFORMED])
def test_malformed_files_name_field_and_line(start: str, new: str, field: str, words: str) -> None:
    text, line = replaced(start, new)
    with pytest.raises(ConfigError) as info:
        loads_space(text, "bad.yaml")
    err, message = info.value, str(info.value)
    assert "\n" not in message
    assert (err.field, err.line) == (field, line), message
    assert message.startswith(f"bad.yaml:{line}: {field}: ") and words in err.message, message


def test_defaults_and_shorthands() -> None:
    file = SpaceFile.model_validate({"base": "b.yaml"})
    assert (file.budgets, file.objectives, file.metric_split, file.trials, file.concurrency) == (
        [1.0], ["accuracy", "train_seconds"], "val", 24, 1)
    assert (file.baseline.seeds, file.baseline.tune_lr) == (3, False)
    assert (file.confirm.enabled, file.confirm.top_k, file.confirm.seeds, file.confirm.max_share) == (True, 5, 3, 0.55)
    assert SpaceFile.model_validate({"base": "b.yaml", "confirm": False}).confirm.enabled is False
    assert (file.sampler.name, file.sampler_seed, file.threads, file.constraints.as_dict()) == ("tpe", 0, 1, {})
    file = SpaceFile.model_validate({"base": "b.yaml", "sampler": "sweep", "seed": 7, "resources": {"cpus": 3.5},
                                     "constraints": {"train_seconds_max": 9, "accuracy_min": 0}})
    assert (file.sampler.name, file.sampler_seed, file.threads) == ("sweep", 7, 3)
    assert file.constraints.as_dict() == {"accuracy_min": 0.0, "train_seconds_max": 9.0}  # given ones only


def test_space_reads_the_schema() -> None:
    s = loads_space(TEXT)
    assert s.sampler.seed == 4 and s.threads_per_trial == 2 and s.constraints == {"accuracy_min": 0.5}
    assert [(p.name, p.kind) for p in s.params] == [
        ("optimizer.lr", "scale"), ("batch_size", "grid"), ("mixup.alpha", "range"), ("sam.interval", "choices")]
    assert s.params[3].is_int is False and s.params[2].start == 0.2  # mixup's default alpha, inside the range
    empty = loads_space(TEXT.replace("hparams:\n  optimizer.lr: {scale: [0.5, 2]}\n  batch_size: {grid: [0.5, 1, 2]}",
                                     "hparams: []"))
    assert empty.hparams == [] and empty.fixed == {}
    nulls = loads_space(TEXT.replace("constraints: {accuracy_min: 0.5}", "constraints:"))
    assert nulls.constraints == {}
