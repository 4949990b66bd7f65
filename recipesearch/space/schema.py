"""The search-space file as pydantic models: every key, its type, its default, and the checks that need
nothing but the file itself. The stage sections (baseline, confirm, simplify) are ``stage_entries.py``'s;
what needs the base recipe is checked in ``loading.py``.

Section order and defaults follow search_spaces/digits.yaml; see the package docstring for the meaning.
"""
from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BeforeValidator, Field, field_validator, model_validator

from recipesearch.algorithms import get_algorithm
from recipesearch.analysis.target import baseline_seeds, describe_seeds
from recipesearch.errors import ConfigError
from recipesearch.space.messages import field_error, show
from recipesearch.space.param_entries import ParamEntry
from recipesearch.space.sampler_spec import OPTION_RANGES, SAMPLER_OPTIONS, SAMPLERS, option_problem
from recipesearch.space.section import Section
from recipesearch.space.stage_entries import LR_SWEEP_RUNS, BaselineEntry, ConfirmEntry, SimplifyEntry

DIRECTIONS = {"accuracy": "maximize", "train_seconds": "minimize", "cost": "minimize"}
CONSTRAINT_KEYS = ("accuracy_min", "train_seconds_max", "cost_max")
# Recipe fields a search space sets itself (budget, seed, threads) or through ``algorithms:``.
RESERVED_FIELDS = ("budget", "seed", "threads", "algorithms")
COST_NEEDS_PRICE = "cost needs price_per_hour (price of one trial's hardware per hour)"


def _empty_section(value: Any) -> Any:
    # An empty section (``constraints:`` with nothing under it, or ``[]``) means "none given".
    return {} if value is None or value == [] else value


def _number_or_bool(value: Any) -> Any:
    if isinstance(value, (bool, int, float)):
        return value
    raise field_error(f"must be a number or boolean, got {show(value)}")


class SamplerEntry(Section):
    """``sampler: {name: tpe, seed: 0, <option>: value}`` or just ``sampler: tpe``; options per sampler
    are those in ``SAMPLER_OPTIONS`` and go to the Optuna sampler's constructor."""

    model_config = {**Section.model_config, "extra": "allow"}
    __pydantic_extra__: dict[str, Annotated[Any, AfterValidator(_number_or_bool)]]
    name: str = "tpe"
    seed: int = 0  # not given: the space's seed (SpaceFile.sampler_seed)

    @classmethod
    def coerce(cls, data: Any) -> Any:
        return {"name": data} if isinstance(data, str) else data

    @classmethod
    def allowed_keys(cls, data: dict[Any, Any]) -> tuple[str, ...]:
        # The name decides which options are known, so it is checked first.
        name = data.get("name", "tpe")
        if name not in SAMPLERS:
            raise field_error(f"unknown sampler {name!r} (allowed: {', '.join(SAMPLERS)})", at="name")
        return ("name", "seed", *SAMPLER_OPTIONS[name])

    @model_validator(mode="after")
    def _option_values(self) -> SamplerEntry:
        for name, value in (self.model_extra or {}).items():
            problem = option_problem(name, value)
            if problem:
                raise field_error(problem, at=name)
        return self

    @property
    def options(self) -> dict[str, Any]:
        extra = self.model_extra or {}
        return {k: int(v) if OPTION_RANGES.get(k, ("",))[0] == "int" else v for k, v in extra.items()}


def gpus_problem(value: Any) -> str | None:
    """Why ``value`` is not a per-trial GPU count (None: it is one). Ray takes fractions below 1 only."""
    if value == "auto":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return f"must be auto or a number of GPUs >= 0 (0.5: two trials per GPU), got {show(value)}"
    if value > 1 and value != int(value):
        return f"a trial takes a fraction of one GPU or whole GPUs, not {value:g}"
    return None


def _gpus(value: Any) -> Any:
    problem = gpus_problem(value)
    if problem:
        raise field_error(problem)
    return value if value == "auto" else float(value)


class ResourcesEntry(Section):
    """Ray resources of one trial: ``resources: auto`` (the default) or ``{cpus: N, gpus: G | auto}``.

    ``gpus: auto`` (also the default inside the mapping) is resolved once Ray is up
    (``search_space.resolve_resources``): one GPU a trial where the cluster has GPUs and the base recipe's
    device is not ``cpu``, else none. It stays ``auto`` in the space hash.

    ``workers: N`` (default 1) trains each trial data-parallel on N workers (``train/distributed.py``,
    ``engine/ranks.py``); ``cpus`` and ``gpus_per_worker`` (``gpus`` means the same) are then each worker's,
    and a worker has one device: ``gpus_per_worker`` is auto, 0 or 1."""

    not_a_mapping: ClassVar[str] = "must be auto or a mapping {cpus: N, gpus: G | auto, workers: N}"
    cpus: float = Field(1.0, gt=0)
    gpus: Annotated[float | Literal["auto"], BeforeValidator(_gpus)] = "auto"
    workers: int = Field(1, ge=1)
    gpus_per_worker: Annotated[float | Literal["auto"], BeforeValidator(_gpus)] = "auto"

    @classmethod
    def coerce(cls, data: Any) -> Any:
        return {} if data == "auto" else data

    @model_validator(mode="after")
    def _one_device_per_worker(self) -> ResourcesEntry:
        if {"gpus", "gpus_per_worker"} <= self.model_fields_set:
            raise field_error("give gpus or gpus_per_worker (the same: each worker's GPUs), not both",
                              at="gpus_per_worker")
        if self.workers > 1 and self.worker_gpus not in ("auto", 0.0, 1.0):
            at = "gpus_per_worker" if "gpus_per_worker" in self.model_fields_set else "gpus"
            raise field_error(f"a data-parallel worker trains on one device: auto, 0 or 1, got {self.worker_gpus:g}",
                              at=at)
        return self

    @property
    def worker_gpus(self) -> float | str:
        """Each worker's GPUs, however spelt."""
        return self.gpus_per_worker if "gpus_per_worker" in self.model_fields_set else self.gpus


SCHEDULERS = ("fifo", "moasha", "promote", "moasha+promote")


class SchedulerEntry(Section):
    """``scheduler: {name: moasha, reduction_factor: 3, min_fraction: 0.111}`` or just ``scheduler: moasha``.

    ``fifo`` (the default): every trial runs to its end. ``moasha``: a search trial reports at rungs (after
    ``min_fraction``, ..., ``1/reduction_factor`` of its steps) and stops at a rung where it is not among the
    best ``1/reduction_factor`` of the trials of its budget there (``recipesearch.analysis.rungs``).
    ``promote``: new proposals start at the cheapest budget and the best ``1/reduction_factor`` of each budget
    are trained again at the next one. ``moasha+promote``: both. Operational, like ``max_failures``: not part
    of the space hash (a resumed search may change it; run.json records it).
    """

    name: Literal["fifo", "moasha", "promote", "moasha+promote"] = "fifo"
    reduction_factor: int = Field(3, ge=2, le=10)
    min_fraction: float = Field(1 / 9, gt=0, lt=1)

    @classmethod
    def coerce(cls, data: Any) -> Any:
        return {"name": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _has_rungs(self) -> SchedulerEntry:
        problem = rungs_problem(self.name, self.reduction_factor, self.min_fraction,
                                "min_fraction" in self.model_fields_set)
        if problem:
            raise field_error(problem[1], at=problem[0])
        return self


def rungs_problem(name: str, reduction_factor: int, min_fraction: float, min_fraction_given: bool,
                  ) -> tuple[str, str] | None:
    """(field, message) when ``name`` asks for MO-ASHA and its rungs (``1/rf, 1/rf^2, ...`` down to
    ``min_fraction``) are none at all, else None.

    Refused rather than warned: a moasha without a rung is a fifo that looks like a moasha (the values
    are fine one by one, but together they can never mean what they say), and the fix is one number."""
    if "moasha" not in name:
        return None
    from recipesearch.analysis.rungs import rung_fractions  # numpy only; what SchedulerSpec.rungs() uses

    if rung_fractions(reduction_factor, min_fraction):
        return None
    first = 1 / reduction_factor
    if min_fraction_given:
        return "min_fraction", (f"{min_fraction:g} leaves moasha no rung: rungs are at 1/{reduction_factor}, "
                                f"1/{reduction_factor}^2, ... of a trial's steps down to min_fraction, so it must be "
                                f"at most 1/{reduction_factor} = {first:.4g}")
    return "reduction_factor", (f"{reduction_factor} leaves moasha no rung with min_fraction {min_fraction:.4g} (the "
                                f"default): the first rung is at 1/{reduction_factor} of a trial's steps; set "
                                f"min_fraction to at most {first:.4g}")


def _fraction(value: float) -> float:
    if value > 1:
        raise field_error(f"accuracy is a fraction in [0, 1], got {value:g}")
    return value


class ConstraintsEntry(Section):
    """Feasibility bounds handed to the sampler (Optuna's constraints: <= 0 is feasible)."""

    # Only the bounds given count (``model_fields_set``); the defaults are never read.
    accuracy_min: Annotated[float, Field(ge=0), AfterValidator(_fraction)] = 0.0
    train_seconds_max: float = Field(float("inf"), gt=0)
    cost_max: float = Field(float("inf"), gt=0)

    def as_dict(self) -> dict[str, float]:
        """The bounds given, in ``CONSTRAINT_KEYS`` order."""
        return {k: getattr(self, k) for k in CONSTRAINT_KEYS if k in self.model_fields_set}


class AlgorithmEntry(Section):
    """``<algorithm>: {always: false, <hyperparameter>: <parameter entry>}``; hyperparameter names are
    checked against the registry by ``SpaceFile`` (this entry does not know its algorithm's name)."""

    model_config = {**Section.model_config, "extra": "allow"}
    not_a_mapping: ClassVar[str] = "must be a mapping of hyperparameters (or {})"
    __pydantic_extra__: dict[str, ParamEntry]
    always: bool = False  # on in every trial (no switch), only its hyperparameters are sampled

    @classmethod
    def coerce(cls, data: Any) -> Any:
        return {} if data is None else data  # ``blurpool:`` = candidate with default hyperparameters

    @classmethod
    def allowed_keys(cls, data: dict[Any, Any]) -> tuple[str, ...]:
        return tuple(data)  # any key here: SpaceFile checked them against the algorithm

    @property
    def hyperparameters(self) -> dict[str, Any]:
        """Hyperparameter name -> parameter entry (a ``KindEntry``) or fixed value, in file order."""
        return dict(self.model_extra or {})


def _check_algorithm_names(value: Any) -> Any:
    if not isinstance(value, dict):
        return value  # the type check says what is wrong
    for name, spec in value.items():
        try:
            hyperparameters = get_algorithm(str(name)).Params.model_fields
        except ConfigError as exc:
            raise field_error(exc.message, at=name) from None
        for hp in spec if isinstance(spec, dict) else ():
            if hp != "always" and hp not in hyperparameters:
                known = ", ".join(hyperparameters) or "none"
                raise field_error(f"unknown hyperparameter of {name} (hyperparameters: {known})", at=f"{name}.{hp}")
    return value


def _text(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        raise field_error("must be text")
    return None if value is None else str(value)  # ``name: 2024`` is a fine name too


def _run_dirs(value: Any) -> Any:
    value = [value] if isinstance(value, str) else value
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise field_error(f"must be a run directory or a list of them, got {show(value)}")
    return value


def _base_shape(value: Any) -> Any:
    if not isinstance(value, (str, dict)):
        raise field_error(f"must be a recipe file path or a recipe mapping, got {show(value)}")
    return value


def _budget_list(value: Any) -> Any:
    if not isinstance(value, list) or not value:
        raise field_error("must be a non-empty list of ratios of max_duration, e.g. [0.25, 0.5, 1, 2]")
    return value


def _distinct_budgets(budgets: list[float]) -> list[float]:
    for i, b in enumerate(budgets):
        if b in budgets[:i]:
            raise field_error(f"budget {b:g} is listed twice", at=i)
    return budgets


def _objective_list(value: Any) -> Any:
    if not isinstance(value, list) or not all(isinstance(o, str) for o in value):
        raise field_error("must be a list such as [accuracy, train_seconds]")
    for i, o in enumerate(value):
        if o not in DIRECTIONS:
            raise field_error(f"unknown objective {o!r} (allowed: {', '.join(DIRECTIONS)})", at=i)
        if o in value[:i]:
            raise field_error(f"{o} is listed twice", at=i)
    if "accuracy" not in value or len(value) < 2:
        raise field_error("must contain accuracy and train_seconds and/or cost")
    return value


def _target(value: Any) -> Any:
    if value in ("baseline", "baseline_best"):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1:
        return float(value)
    raise field_error(f"allowed: baseline, baseline_best, or an accuracy between 0 and 1 (got {show(value)})")


def _split(value: Any) -> Any:
    if value not in ("test", "val"):
        raise field_error(f"allowed: test, val (got {value!r})")
    return value


class SpaceFile(Section):
    """The whole file. Keys in the order the "unknown field" error lists them."""

    name: Annotated[str | None, BeforeValidator(_text)] = None  # display only: not part of the hash
    base: Annotated[str | dict[Any, Any], BeforeValidator(_base_shape)] = Field(
        description="a recipe file path or an inline recipe mapping")
    budgets: Annotated[list[Annotated[float, Field(gt=0)]], BeforeValidator(_budget_list),
                       AfterValidator(_distinct_budgets)] = [1.0]
    objectives: Annotated[list[str], BeforeValidator(_objective_list)] = ["accuracy", "train_seconds"]
    price_per_hour: Annotated[float, Field(gt=0)] | None = None
    # Selection on validation by default; the test split is reported, never chosen on.
    metric_split: Annotated[Literal["test", "val"], BeforeValidator(_split)] = "val"
    # The accuracy the headline is measured at (analysis/target.py): the baseline's at budget 1 by default.
    target: Annotated[str | float, BeforeValidator(_target)] = "baseline"
    constraints: Annotated[ConstraintsEntry, BeforeValidator(_empty_section)] = ConstraintsEntry()
    sampler: SamplerEntry = SamplerEntry()
    trials: int = Field(24, ge=1)  # baselines included
    concurrency: int = Field(1, ge=1)
    resources: Annotated[ResourcesEntry, BeforeValidator(_empty_section)] = ResourcesEntry()
    threads_per_trial: int = Field(1, ge=1)  # not given: resources.cpus (at least 1), see ``threads``
    # Retries of a trial whose worker died (node lost, process killed for memory): Ray Tune's
    # FailureConfig(max_failures). A trial failing for its own reason (divergence, bad params) is a result and
    # is never retried. Operational, like ``name``: not part of the space hash.
    max_failures: int = Field(2, ge=0, le=100)
    # Minutes between two checkpoints of a running trial (0 or null: none), so a trial cut by a lost node or
    # kill -9 goes on from its last one (Ray Tune's retry, --resume). 10: a trial shorter than that (every
    # digits or Fashion-MNIST trial) never pays for one; a long one loses at most 10 minutes. Operational.
    checkpoint_minutes: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = 10.0
    scheduler: Annotated[SchedulerEntry, BeforeValidator(_empty_section)] = SchedulerEntry()
    # Every stage within this many trainings of the baseline at budget 1 (engine/search_budget.py). Operational.
    search_budget: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    # Earlier searches whose best recipes this one proposes first (engine/warm_start.py). Operational.
    warm_start: Annotated[list[str], BeforeValidator(_run_dirs)] = []
    seed: int = 0
    baseline: Annotated[BaselineEntry, BeforeValidator(_empty_section)] = BaselineEntry()
    confirm: Annotated[ConfirmEntry, BeforeValidator(_empty_section)] = ConfirmEntry()
    simplify: Annotated[SimplifyEntry, BeforeValidator(_empty_section)] = SimplifyEntry(enabled=False)
    hparams: Annotated[dict[str, ParamEntry], BeforeValidator(_empty_section)] = {}
    algorithms: Annotated[dict[str, AlgorithmEntry], BeforeValidator(_empty_section),
                          BeforeValidator(_check_algorithm_names)] = {}

    @field_validator("hparams", mode="before")
    @classmethod
    def _text_keys(cls, value: Any) -> Any:
        # ``1: {...}`` is an unknown recipe field (loading.py says so), not a type error.
        return {str(k): v for k, v in value.items()} if isinstance(value, dict) else value

    @model_validator(mode="after")
    def _across_sections(self) -> SpaceFile:
        if self.price_per_hour is None and "cost" in self.objectives:
            raise field_error(COST_NEEDS_PRICE, at="objectives")
        if self.price_per_hour is None and "cost_max" in self.constraints.model_fields_set:
            raise field_error(COST_NEEDS_PRICE, at="constraints.cost_max")
        if self.simplify.enabled and not self.confirm.enabled:
            raise field_error("works on the confirmation's recipes: it needs the confirmation stage (confirm: true)",
                              at="simplify")
        if self.simplify.budget is not None and self.simplify.budget not in self.budgets:
            raise field_error(f"{self.simplify.budget:g} is not one of the budgets "
                              f"({', '.join(f'{b:g}' for b in self.budgets)})", at="simplify.budget")
        if self.baseline.seeds_elsewhere is not None and self.target != "baseline":
            raise field_error(f"needs target: baseline (the budgets it leaves at one seed are those the target is "
                              f"not read at); with target {self.target} give every budget baseline.seeds",
                              at="baseline.seeds_elsewhere")
        if self.trials < self.baseline_runs:
            sweep = " + the LR sweep" if self.baseline.tune_lr else ""
            seeds = describe_seeds(self.budgets, self.baseline.seeds, self.baseline.seeds_elsewhere)
            raise field_error(f"{self.trials} trials cannot even train the baseline ({seeds}{sweep}): "
                              f"at least {self.baseline_runs}", at="trials")
        return self

    @property
    def baseline_runs(self) -> int:
        """Trials the baseline takes before any proposal (LR sweep runs included)."""
        b = self.baseline
        return sum(baseline_seeds(x, self.budgets, b.seeds, b.seeds_elsewhere) for x in self.budgets) \
            + (LR_SWEEP_RUNS if b.tune_lr else 0)

    @property
    def sampler_seed(self) -> int:
        return self.sampler.seed if "seed" in self.sampler.model_fields_set else self.seed

    @property
    def threads(self) -> int:
        if "threads_per_trial" in self.model_fields_set:
            return self.threads_per_trial
        return max(1, int(self.resources.cpus))
