"""Search spaces: which recipes a search may train, validated (field + line) before anything runs.

API (the runner depends on this; names are stable)
--------------------------------------------------
``load_space(path) -> SearchSpace``; ``loads_space(text, source="<string>", base_dir=None) -> SearchSpace``;
``space_from_dict(data, source="<string>", lines=None, base_dir=None, text=None) -> SearchSpace``.
Every problem is a one-line ``ConfigError`` (``space.yaml:12: hparams.optimizer.lr.scale: min > max``).

``SearchSpace`` attributes: ``name: str``, ``base: Recipe`` (as written, budget as in the base file),
``budgets: list[float]``, ``objectives: list[str]`` (accuracy plus train_seconds and/or cost, in the order written),
``directions: list[str]`` ("maximize" for accuracy, "minimize" otherwise, same order), ``metric_split``
("val" by default | "test": which accuracy is the objective; with "val" a base recipe without a
validation split gets ``data.val_fraction: 0.1``), ``selection_column`` (the trials column selection reads:
``val_accuracy`` for "val", ``accuracy`` for "test"), ``baseline: BaselineSpec(seeds, tune_lr)``,
``confirm: ConfirmSpec(enabled, top_k, seeds, max_share)`` (``confirm: false`` turns the stage off),
``simplify: SimplifySpec(enabled, budget)`` (the stage after the confirmation, engine/simplify.py; off by
default; operational, not in the hash, ``with_simplify`` makes a changed copy),
``scheduler: SchedulerSpec(name, reduction_factor, min_fraction)`` (fifo | moasha | promote | moasha+promote:
early stopping at rungs and promotion across budgets, ``recipesearch.analysis.rungs``),
``constraints: dict[str, float]`` (keys ``accuracy_min``, ``train_seconds_max``, ``cost_max``),
``sampler: SamplerSpec(name, seed, options)``, ``trials`` (LR sweep, baseline runs and proposals;
confirmation runs come on top), ``concurrency``, ``resources: Resources(cpus: float, gpus: float | "auto",
workers: int)`` (``resources: auto`` by default; ``resolve_resources`` turns ``auto`` into 1 or 0 GPUs once Ray
is up; ``workers`` > 1: data-parallel trials, cpus and gpus per worker),
``threads_per_trial: int``, ``seed: int``, ``price_per_hour: float | None``, ``max_failures: int``,
``checkpoint_minutes: float | None`` (between a running trial's checkpoints; None: none; operational, not in
the hash, ``with_checkpoint_minutes`` makes a changed copy), ``path: Path | None``,
``text: str`` (exact source YAML), ``hash: str`` (12 hex, sha256 of the canonical validated content; the
display ``name`` is not part of it), ``params: list[ParamSpec]`` (every sampled parameter, in ask order).
Grouped as the constructor takes them: ``scoring: Scoring`` (objectives, metric_split, constraints,
price_per_hour), ``execution: Execution`` (trials, concurrency, resources, threads_per_trial, max_failures,
checkpoint_minutes), ``origin: Origin`` (path, text, source); the attributes above read through to them.

Methods:
- ``suggest(trial) -> dict[str, Any]`` define-by-run on an ``optuna.Trial`` (or Ray's captor, or
  ``optuna.trial.FixedTrial(params)``); only ``trial.suggest_*`` is called. Returns the flat params dict.
- ``recipe_for(params) -> Recipe``: the trial's recipe, validated (a bad combination is a ConfigError;
  unknown or missing parameter names are ConfigErrors too).
- ``baseline_params(budget, lr=None) -> dict``; ``baselines(lr=None) -> list[dict]`` (one per budget, in
  budget order; ``lr``: the LR parameter the sweep chose); ``is_baseline(params) -> bool``;
  ``lr_sweep() -> list[dict]`` (``baseline.tune_lr``); ``baseline_runs`` (sweep + budgets x seeds).
- ``recipe_for(params, seed_index=0)``: a repeat of a recipe trains with seed ``space.seed + seed_index``.
- ``complete(partial) -> dict``: run the define-by-run walk with ``partial`` fixed and the base/reference
  value everywhere else (what a FixedTrial would see); used by the sweep strategy.
- ``algorithms_on(params) -> list[str]`` (sorted, always-on and base algorithms included).
- ``objective_values(accuracy, train_seconds) -> list[float]`` in ``objectives`` order;
  ``constraint_dict(accuracy, train_seconds) -> dict[str, float]`` (keys of ``constraints``, <= 0 means
  satisfied, Optuna's convention; for ``trial.set_constraint``, see search/samplers.py
  ``record_constraints``), ``constraints_values(...) -> list[float]`` (the same values; empty without
  constraints); ``cost(train_seconds) -> float | None``.
- ``param_names() -> list[str]``: every name that can appear in a params dict.

Params dict naming (what ``suggest`` returns, Optuna's ``trial.params``, ``trials.csv`` ``params_<name>``):
- ``budget``: float, categorical over ``budgets``; asked first.
- each ``hparams`` entry under its YAML key (``optimizer.lr``, ``batch_size``): the MULTIPLIER of the base
  value for ``scale``/``grid`` kinds (1.0 = base), the absolute value for ``range``/``choices``. Fixed
  (bare scalar) entries are not parameters; they are always applied.
- ``alg.<name>``: bool, for each switchable candidate algorithm in YAML order. Not asked (absent: off)
  when switching it on would form a forbidden pair (``interactions.forbidden_pairs()``) with an
  algorithm already on (always-on ones, base algorithms that are not candidates, earlier candidates).
- ``<name>.<hparam>`` (``mixup.alpha``, ``sam.rho``): only when the algorithm is on; scale/grid kinds are
  multipliers of the reference value (the base recipe's value if the base has the algorithm, else the
  algorithm's default), range/choices kinds absolute. Always-on algorithms have no ``alg.`` key.
Names never contain "/" (Ray's ``unflatten_dict``). Values are float/int/str/bool (Optuna categorical types).

Baselines: ``baseline_params(b)`` reproduces the base recipe at budget ``b`` (multipliers 1.0, absolute
kinds at the base value; a switchable candidate is on exactly when the base recipe has it; always-on
algorithms at their reference values), so ``recipe_for(baseline_params(b))`` equals the base with
``budget=b, seed=space.seed, threads=space.threads_per_trial``. Grids/choices that do not contain the
baseline value get it added to the categorical choices handed to Optuna (Optuna refuses an enqueued
categorical value outside the choices); a scale/range not containing it is left alone (Optuna accepts an
out-of-range enqueued float with a warning).

Space file format: see search_spaces/digits.yaml (the schema: ``schema.SpaceFile``) and the kinds below.
``{scale: [lo, hi], log: true}`` relative multiplier, continuous (log by default);
``{grid: [...]}`` relative multipliers, categorical; ``{range: [lo, hi], log: false, int: auto}`` absolute;
``{choices: [...]}`` absolute categorical; a bare scalar is a fixed value. Ints are rounded.
Each kind is a ``ParamSpec`` subclass (``params.py``): ``suggest(trial)``, ``value(param)``, and the sweep's
``ladder()`` / ``neighbours(value, k)``.

Modules: ``schema`` (pydantic models of the file), ``stage_entries`` (its baseline / confirm / simplify
sections), ``param_entries`` (one parameter as written, and its ``ParamSpec``), ``params`` (the kinds),
``sampler_spec`` (sampler names and options), ``loading`` (file -> ``SearchSpace``, the checks that need the
base recipe), ``search_space`` (``SearchSpace``), ``scoring`` (``Scoring``: objectives, selection split,
constraints, price), ``execution`` (``Execution``: trials, concurrency, ``Resources``, threads, retries,
checkpoints), ``stages`` (the baseline / confirm / simplify / scheduler specs), ``messages`` (one-line
errors). Nothing here imports ``recipesearch.engine``.
"""

from __future__ import annotations

from recipesearch.space.execution import Execution, Resources, TrialResources, resolve_resources
from recipesearch.space.loading import load_space, loads_space, space_from_dict
from recipesearch.space.param_entries import KINDS
from recipesearch.space.params import STEPS, ChoicesParam, GridParam, ParamSpec, RangeParam, ScaleParam
from recipesearch.space.sampler_spec import SAMPLER_OPTIONS, SAMPLERS, SamplerSpec
from recipesearch.space.schema import CONSTRAINT_KEYS, DIRECTIONS, RESERVED_FIELDS, SpaceFile
from recipesearch.space.scoring import Scoring
from recipesearch.space.search_space import AlgorithmSpec, Origin, SearchSpace, params_key
from recipesearch.space.stages import BaselineSpec, ConfirmSpec, SchedulerSpec, SimplifySpec

__all__ = [
    "CONSTRAINT_KEYS", "DIRECTIONS", "KINDS", "RESERVED_FIELDS", "SAMPLERS", "SAMPLER_OPTIONS", "STEPS",
    "AlgorithmSpec", "BaselineSpec", "ChoicesParam", "ConfirmSpec", "Execution", "GridParam", "Origin", "ParamSpec",
    "RangeParam", "Resources", "SamplerSpec", "ScaleParam", "SchedulerSpec", "Scoring", "SearchSpace",
    "SimplifySpec", "SpaceFile", "TrialResources", "load_space", "loads_space", "params_key", "resolve_resources",
    "space_from_dict",
]
