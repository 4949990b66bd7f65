"""Search spaces: which recipes a search may train, validated (field + line) before anything runs.

API (the runner depends on this; names are stable)
--------------------------------------------------
``load_space(path) -> SearchSpace``; ``loads_space(text, source="<string>", base_dir=None) -> SearchSpace``;
``space_from_dict(data, source="<string>", lines=None, base_dir=None, text=None) -> SearchSpace``.
Every problem is a one-line ``ConfigError`` (``space.yaml:12: hparams.optimizer.lr.scale: min > max``).

``SearchSpace`` attributes: ``name: str``, ``base: Recipe`` (as written, budget as in the base file),
``budgets: list[float]``, ``objectives: list[str]`` (accuracy plus train_seconds and/or cost, in the order written),
``directions: list[str]`` ("maximize" for accuracy, "minimize" otherwise, same order), ``metric_split``
("test" | "val": which accuracy is the objective), ``constraints: dict[str, float]`` (keys
``accuracy_min``, ``train_seconds_max``, ``cost_max``), ``sampler: SamplerSpec(name, seed, options)``,
``trials`` (total, baselines included), ``concurrency``, ``resources: Resources(cpus: float, gpus: float)``,
``threads_per_trial: int``, ``seed: int``, ``price_per_hour: float | None``, ``path: Path | None``,
``text: str`` (exact source YAML), ``hash: str`` (12 hex, sha256 of the canonical validated content; the
display ``name`` is not part of it), ``params: list[ParamSpec]`` (every sampled parameter, in ask order).

Methods:
- ``suggest(trial) -> dict[str, Any]`` define-by-run on an ``optuna.Trial`` (or Ray's captor, or
  ``optuna.trial.FixedTrial(params)``); only ``trial.suggest_*`` is called. Returns the flat params dict.
- ``recipe_for(params) -> Recipe``: the trial's recipe, validated (a bad combination is a ConfigError;
  unknown or missing parameter names are ConfigErrors too).
- ``baseline_params(budget) -> dict``; ``baselines() -> list[dict]`` (one per budget, in budget order);
  ``is_baseline(params) -> bool``.
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

Space file format: see search_spaces/digits.yaml and the kinds below.
``{scale: [lo, hi], log: true}`` relative multiplier, continuous (log by default);
``{grid: [...]}`` relative multipliers, categorical; ``{range: [lo, hi], log: false, int: auto}`` absolute;
``{choices: [...]}`` absolute categorical; a bare scalar is a fixed value. Ints are rounded.
"""
from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ValidationError

from recipesearch.errors import ConfigError
from recipesearch.recipe import Recipe, load_recipe, recipe_from_dict, set_dotted
from recipesearch.yamlio import LineMap, parse_yaml, read_yaml

SAMPLERS = ("tpe", "nsga2", "gp", "random", "sweep")
DIRECTIONS = {"accuracy": "maximize", "train_seconds": "minimize", "cost": "minimize"}
CONSTRAINT_KEYS = ("accuracy_min", "train_seconds_max", "cost_max")
KINDS = ("scale", "grid", "range", "choices")
# Recipe fields a search space sets itself (budget, seed, threads) or through ``algorithms:``.
RESERVED_FIELDS = ("budget", "seed", "threads", "algorithms")
_TOP_KEYS = (
    "name", "base", "budgets", "objectives", "price_per_hour", "metric_split", "constraints", "sampler",
    "trials", "concurrency", "resources", "threads_per_trial", "seed", "hparams", "algorithms",
)
_KIND_OPTIONS = {"scale": ("log",), "grid": (), "range": ("log", "int"), "choices": ()}


@dataclass(frozen=True)
class ParamSpec:
    """One sampled parameter: its name in the params dict, how Optuna samples it, how it maps to a value.

    Relative kinds (scale, grid) sample a multiplier of ``ref``; absolute kinds (range, choices) the value.
    """

    name: str  # key in the params dict: "optimizer.lr", "mixup.alpha"
    field: str  # where the space file declares it, for errors: "hparams.optimizer.lr"
    kind: Literal["scale", "grid", "range", "choices"]
    low: float | None = None  # scale, range
    high: float | None = None
    log: bool = False
    is_int: bool = False  # range: suggest_int; scale/grid: the product is rounded
    choices: tuple[Any, ...] = ()  # grid, choices: exactly what Optuna gets (baseline value included)
    ref: Any = None  # the base (or default) value a multiplier multiplies
    baseline: Any = None  # the parameter value that reproduces the base recipe
    start: Any = None  # an in-space value near the base one: used when an algorithm is switched on

    @property
    def relative(self) -> bool:
        return self.kind in ("scale", "grid")

    @property
    def hparam(self) -> str:
        """The last part of the name: the recipe field or algorithm hyperparameter it sets."""
        return self.name.rsplit(".", 1)[-1]

    def suggest(self, trial: Any) -> Any:
        if self.kind in ("grid", "choices"):
            return trial.suggest_categorical(self.name, list(self.choices))
        assert self.low is not None and self.high is not None
        if self.kind == "range" and self.is_int:
            return trial.suggest_int(self.name, int(self.low), int(self.high), log=self.log)
        return trial.suggest_float(self.name, self.low, self.high, log=self.log)

    def value(self, param: Any) -> Any:
        """The recipe value for a sampled parameter (multiplier × reference for relative kinds)."""
        if not self.relative:
            return int(param) if self.is_int and isinstance(param, float) and param.is_integer() else param
        return _round_half_up(self.ref * float(param)) if self.is_int else self.ref * float(param)


@dataclass(frozen=True)
class AlgorithmSpec:
    """A candidate algorithm: switched on/off by the sampler unless ``always``."""

    name: str
    always: bool
    params: tuple[ParamSpec, ...]
    fixed: dict[str, Any]  # hyperparameters given as bare values
    in_base: bool  # the base recipe already has it (then the baseline has it on)

    @property
    def switch(self) -> str:
        return f"alg.{self.name}"


@dataclass(frozen=True)
class SamplerSpec:
    name: str = "tpe"
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Resources:
    cpus: float = 1.0
    gpus: float = 0.0


class _Filler:
    """A trial-like object answering each ``suggest_*`` from ``values`` (else the default) — a FixedTrial
    that never complains, so ``complete`` walks exactly the same define-by-run path as ``suggest``."""

    def __init__(self, values: dict[str, Any], default: Callable[[str], Any]):
        self.values, self.default = values, default

    def _get(self, name: str) -> Any:
        return self.values[name] if name in self.values else self.default(name)

    def suggest_categorical(self, name: str, choices: Any) -> Any:
        return self._get(name)

    def suggest_float(self, name: str, low: float, high: float, *, log: bool = False) -> Any:
        return self._get(name)

    def suggest_int(self, name: str, low: int, high: int, *, log: bool = False) -> Any:
        return self._get(name)


class SearchSpace:
    """A validated search space; build it with ``load_space`` / ``space_from_dict`` (see module docstring)."""

    def __init__(
        self,
        *,
        name: str,
        base: Recipe,
        budgets: list[float],
        objectives: list[str],
        metric_split: Literal["test", "val"],
        constraints: dict[str, float],
        sampler: SamplerSpec,
        trials: int,
        concurrency: int,
        resources: Resources,
        threads_per_trial: int,
        seed: int,
        price_per_hour: float | None,
        hparams: list[ParamSpec],
        fixed: dict[str, Any],
        algorithms: dict[str, AlgorithmSpec],
        path: Path | None = None,
        text: str = "",
        source: str = "<string>",
    ):
        self.name, self.base, self.budgets, self.objectives = name, base, budgets, objectives
        self.directions = [DIRECTIONS[o] for o in objectives]
        self.metric_split, self.constraints, self.sampler = metric_split, constraints, sampler
        self.trials, self.concurrency, self.resources = trials, concurrency, resources
        self.threads_per_trial, self.seed, self.price_per_hour = threads_per_trial, seed, price_per_hour
        self.hparams, self.fixed, self.algorithms = hparams, fixed, algorithms
        self.path, self.text, self.source = path, text, source
        # Algorithms on in every trial: base algorithms that are not candidates, and always-on candidates.
        self._fixed_on = [a for a in base.algorithms if a not in algorithms]
        self._fixed_on += [a.name for a in algorithms.values() if a.always and a.name not in self._fixed_on]
        self.hash = hashlib.sha256(self._canonical().encode()).hexdigest()[:12]

    # -- what the sampler sees -------------------------------------------------------------------------
    @property
    def params(self) -> list[ParamSpec]:
        """Every sampled parameter except ``budget`` and the ``alg.*`` switches, in ask order."""
        return [*self.hparams, *(p for a in self.algorithms.values() for p in a.params)]

    def param_names(self) -> list[str]:
        names = ["budget", *(p.name for p in self.hparams)]
        for alg in self.algorithms.values():
            names += ([] if alg.always else [alg.switch]) + [p.name for p in alg.params]
        return names

    def suggest(self, trial: Any) -> dict[str, Any]:
        """Define-by-run: budget, then hparams, then each candidate's switch and (when on) its hparams."""
        params: dict[str, Any] = {"budget": trial.suggest_categorical("budget", list(self.budgets))}
        for p in self.hparams:
            params[p.name] = p.suggest(trial)
        on = set(self._fixed_on)
        for alg in self.algorithms.values():
            if not alg.always:
                if _conflicts(alg.name, on):
                    continue  # switching it on would form a forbidden pair: not asked, off
                params[alg.switch] = bool(trial.suggest_categorical(alg.switch, [False, True]))
                if not params[alg.switch]:
                    continue
                on.add(alg.name)
            for p in alg.params:
                params[p.name] = p.suggest(trial)
        return params

    def complete(self, partial: dict[str, Any]) -> dict[str, Any]:
        """The params dict ``suggest`` gives when ``partial`` is fixed and everything else is left at the
        base value (switches off unless the base has the algorithm; a freshly switched-on algorithm's
        hyperparameters at an in-space value near its reference). Keys ``suggest`` would not ask drop out."""
        specs = {p.name: p for p in self.params}
        fresh = {p.name for a in self.algorithms.values() if not (a.always or a.in_base) for p in a.params}

        def default(name: str) -> Any:
            if name == "budget":
                return self.budgets[0]
            if name.startswith("alg."):
                return self.algorithms[name[4:]].in_base
            spec = specs[name]
            return spec.start if name in fresh else spec.baseline

        return self.suggest(_Filler(partial, default))

    def baseline_params(self, budget: float) -> dict[str, Any]:
        """The params that reproduce the base recipe at ``budget`` (see module docstring)."""
        return self.complete({"budget": float(budget)})

    def baselines(self) -> list[dict[str, Any]]:
        return [self.baseline_params(b) for b in self.budgets]

    def is_baseline(self, params: dict[str, Any]) -> bool:
        budget = params.get("budget")
        if not isinstance(budget, (int, float)) or not any(math.isclose(budget, b) for b in self.budgets):
            return False
        return params_key(params) == params_key(self.baseline_params(float(budget)))

    def algorithms_on(self, params: dict[str, Any]) -> list[str]:
        on = set(self._fixed_on)
        on.update(a.name for a in self.algorithms.values() if not a.always and params.get(a.switch))
        return sorted(on)

    # -- from params to a recipe ----------------------------------------------------------------------
    def recipe_for(self, params: dict[str, Any]) -> Recipe:
        """The trial's recipe: base + multipliers/values + algorithms + budget, seed and threads."""
        src = "trial params"
        known = set(self.param_names())
        for key in params:
            if key not in known:
                raise ConfigError(key, f"unknown parameter of this search space (known: {', '.join(sorted(known))})", src)

        def get(name: str) -> Any:
            if name not in params:
                raise ConfigError(name, "missing parameter", src)
            return params[name]

        data = self.base.to_dict()
        for name, value in self.fixed.items():
            set_dotted(data, name, value)
        for p in self.hparams:
            set_dotted(data, p.name, p.value(get(p.name)))
        algos = dict(data.get("algorithms", {}))
        for alg in self.algorithms.values():
            if not (alg.always or params.get(alg.switch, False)):
                algos.pop(alg.name, None)
                for p in alg.params:
                    if p.name in params:
                        raise ConfigError(p.name, f"given while {alg.name} is off", src)
                continue
            hp = dict(self.base.algorithms.get(alg.name, {}))
            hp.update(alg.fixed)
            for p in alg.params:
                hp[p.hparam] = p.value(get(p.name))
            algos[alg.name] = hp
        data.update(algorithms=algos, budget=float(get("budget")), seed=self.seed, threads=self.threads_per_trial)
        return recipe_from_dict(data, source=src)

    # -- objectives -----------------------------------------------------------------------------------
    def cost(self, train_seconds: float) -> float | None:
        """Price of the training time: train_seconds / 3600 × price_per_hour (None without a price)."""
        return None if self.price_per_hour is None else train_seconds / 3600.0 * self.price_per_hour

    def objective_values(self, accuracy: float, train_seconds: float) -> list[float]:
        values = {"accuracy": accuracy, "train_seconds": train_seconds, "cost": self.cost(train_seconds)}
        return [float(values[o]) for o in self.objectives]  # type: ignore[arg-type]

    def constraint_dict(self, accuracy: float, train_seconds: float) -> dict[str, float]:
        """``{constraint key: value}`` in CONSTRAINT_KEYS order; <= 0 means satisfied (Optuna's convention)."""
        cost = train_seconds / 3600.0 * (self.price_per_hour or 0.0)
        excess = {
            "accuracy_min": lambda bound: bound - accuracy,
            "train_seconds_max": lambda bound: train_seconds - bound,
            "cost_max": lambda bound: cost - bound,
        }
        return {k: float(excess[k](self.constraints[k])) for k in CONSTRAINT_KEYS if k in self.constraints}

    def constraints_values(self, accuracy: float, train_seconds: float) -> list[float]:
        """The values of ``constraint_dict`` as a list (empty without constraints)."""
        return list(self.constraint_dict(accuracy, train_seconds).values())

    # -- identity -------------------------------------------------------------------------------------
    def _canonical(self) -> str:
        content = {
            "base": self.base.to_dict(), "budgets": self.budgets, "objectives": self.objectives,
            "metric_split": self.metric_split, "constraints": self.constraints, "sampler": asdict(self.sampler),
            "trials": self.trials, "concurrency": self.concurrency, "resources": asdict(self.resources),
            "threads_per_trial": self.threads_per_trial, "seed": self.seed, "price_per_hour": self.price_per_hour,
            "fixed": self.fixed, "hparams": [asdict(p) for p in self.hparams],
            "algorithms": [asdict(a) for a in self.algorithms.values()],
        }
        content["base"].pop("name", None)
        return json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)

    def __repr__(self) -> str:
        return f"SearchSpace({self.name!r}, hash={self.hash}, {len(self.budgets)} budgets, {self.trials} trials)"


def params_key(params: dict[str, Any]) -> str:
    """A canonical string for a params dict: equal keys ⇔ the same trial (floats to 10 significant digits)."""

    def norm(v: Any) -> Any:
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, (int, float)):
            return float(f"{float(v):.10g}")
        return str(v)

    return json.dumps({k: norm(v) for k, v in params.items()}, sort_keys=True)


def _conflicts(name: str, on: Iterable[str]) -> bool:
    from recipesearch.algorithms.interactions import forbidden_pairs

    on = set(on)
    return any((a == name and b in on) or (b == name and a in on) for a, b in forbidden_pairs())


def _round_half_up(x: float) -> int:
    return int(math.floor(x + 0.5))


# ---------------------------------------------------------------------------------------------------------
# Loading and validation
# ---------------------------------------------------------------------------------------------------------
class _Ctx:
    """Where errors point: the source file and the line of each dotted field."""

    def __init__(self, source: str, lines: LineMap | None):
        self.source, self.lines = source, lines

    def error(self, field_: str, message: str) -> ConfigError:
        return ConfigError(field_, message, self.source, self.lines.line_of(field_) if self.lines else None)


def load_space(path: str | Path) -> SearchSpace:
    """Read and validate a search-space YAML file; ``base:`` paths are relative to the file."""
    p = Path(path)
    data, lines = read_yaml(p)
    return space_from_dict(data, str(p), lines, base_dir=p.parent, text=p.read_text(), path=p)


def loads_space(text: str, source: str = "<string>", base_dir: str | Path | None = None) -> SearchSpace:
    data, lines = parse_yaml(text, source)
    return space_from_dict(data, source, lines, base_dir=base_dir, text=text)


def space_from_dict(
    data: Any,
    source: str = "<string>",
    lines: LineMap | None = None,
    base_dir: str | Path | None = None,
    text: str | None = None,
    path: str | Path | None = None,
) -> SearchSpace:
    """Validate a mapping into a SearchSpace; every problem is a one-line ConfigError with field and line."""
    ctx = _Ctx(source, lines)
    if not isinstance(data, dict):
        raise ctx.error("", "a search space must be a YAML mapping")
    for key in data:
        if key not in _TOP_KEYS:
            raise ctx.error(str(key), f"unknown field (allowed: {', '.join(_TOP_KEYS)})")
    if "base" not in data:
        raise ctx.error("base", "missing: a recipe file path or an inline recipe mapping")

    base = _base(ctx, data["base"], base_dir)
    budgets = _budgets(ctx, data.get("budgets", [1.0]))
    objectives = _objectives(ctx, data.get("objectives", ["accuracy", "train_seconds"]))
    price = data.get("price_per_hour")
    if price is not None:
        price = _number(ctx, "price_per_hour", price, low=0.0, low_open=True)
    constraints = _constraints(ctx, data.get("constraints") or {})
    if price is None and ("cost" in objectives or "cost_max" in constraints):
        where = "objectives" if "cost" in objectives else "constraints.cost_max"
        raise ctx.error(where, "cost needs price_per_hour (price of one trial's hardware per hour)")
    metric_split = data.get("metric_split", "test")
    if metric_split not in ("test", "val"):
        raise ctx.error("metric_split", f"allowed: test, val (got {metric_split!r})")
    if metric_split == "val" and base.data.val_fraction <= 0:
        raise ctx.error("metric_split", "val needs a validation split: set base data.val_fraction > 0")
    seed = _integer(ctx, "seed", data.get("seed", 0))
    sampler = _sampler(ctx, data.get("sampler", {"name": "tpe"}), seed)
    trials = _integer(ctx, "trials", data.get("trials", 24), low=1)
    if trials < len(budgets):
        raise ctx.error("trials", f"{trials} trials cannot even train the baseline at the {len(budgets)} budgets")
    concurrency = _integer(ctx, "concurrency", data.get("concurrency", 1), low=1)
    resources = _resources(ctx, data.get("resources") or {})
    threads = _integer(ctx, "threads_per_trial", data.get("threads_per_trial", max(1, int(resources.cpus))), low=1)
    name = data.get("name")
    if name is None:
        name = Path(source).stem if path is not None else "search"
    elif isinstance(name, (dict, list)):
        raise ctx.error("name", "must be text")

    hparams, fixed = _hparams(ctx, data.get("hparams") or {}, base)
    algorithms = _algorithms(ctx, data.get("algorithms") or {}, base)

    space = SearchSpace(
        name=str(name), base=base, budgets=budgets, objectives=objectives, metric_split=metric_split,
        constraints=constraints, sampler=sampler, trials=trials, concurrency=concurrency, resources=resources,
        threads_per_trial=threads, seed=seed, price_per_hour=price, hparams=hparams, fixed=fixed,
        algorithms=algorithms, path=Path(path) if path is not None else None,
        text=text if text is not None else yaml.safe_dump(data, sort_keys=False), source=source,
    )
    # The baseline must be a valid recipe at every budget (catches e.g. a fixed value that breaks it).
    for b in budgets:
        try:
            space.recipe_for(space.baseline_params(b))
        except ConfigError as exc:
            raise ctx.error("base", f"the baseline at budget {b} is not a valid recipe: {exc.field}: {exc.message}") from None
    return space


# -- scalars -----------------------------------------------------------------------------------------------
def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _number(ctx: _Ctx, f: str, v: Any, low: float | None = None, low_open: bool = False) -> float:
    if not _is_number(v):
        raise ctx.error(f, f"must be a number, got {_show(v)}")
    if low is not None and (v <= low if low_open else v < low):
        raise ctx.error(f, f"must be {'>' if low_open else '>='} {low:g}, got {v}")
    return float(v)


def _integer(ctx: _Ctx, f: str, v: Any, low: int | None = None) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise ctx.error(f, f"must be an integer, got {_show(v)}")
    if low is not None and v < low:
        raise ctx.error(f, f"must be >= {low}, got {v}")
    return v


def _mapping(ctx: _Ctx, f: str, v: Any) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ctx.error(f, f"must be a mapping, got {_show(v)}")
    return v


def _show(v: Any) -> str:
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, list):
        return "a list"
    return "nothing" if v is None else repr(v)


def _check_keys(ctx: _Ctx, f: str, mapping: dict[str, Any], allowed: Iterable[str]) -> None:
    allowed = tuple(allowed)
    for key in mapping:
        if key not in allowed:
            raise ctx.error(f"{f}.{key}", f"unknown field (allowed: {', '.join(allowed) or 'none'})")


# -- sections ----------------------------------------------------------------------------------------------
def _base(ctx: _Ctx, v: Any, base_dir: str | Path | None) -> Recipe:
    if isinstance(v, str):
        p = Path(v).expanduser()
        if not p.is_absolute():
            p = Path(base_dir or ".") / p
        if not p.is_file():
            raise ctx.error("base", f"recipe file not found: {p}")
        return load_recipe(p)  # its errors name the recipe file and line
    if isinstance(v, dict):
        sub = LineMap({k[5:]: n for k, n in (ctx.lines or {}).items() if k.startswith("base.")})
        try:
            return recipe_from_dict(v, ctx.source, sub)
        except ConfigError as exc:
            raise ctx.error(f"base.{exc.field}" if exc.field else "base", exc.message) from None
    raise ctx.error("base", f"must be a recipe file path or a recipe mapping, got {_show(v)}")


def _budgets(ctx: _Ctx, v: Any) -> list[float]:
    if not isinstance(v, list) or not v:
        raise ctx.error("budgets", "must be a non-empty list of ratios of max_duration, e.g. [0.25, 0.5, 1, 2]")
    out = [_number(ctx, f"budgets.{i}", b, low=0.0, low_open=True) for i, b in enumerate(v)]
    for i, b in enumerate(out):
        if b in out[:i]:
            raise ctx.error(f"budgets.{i}", f"budget {b:g} is listed twice")
    return out


def _objectives(ctx: _Ctx, v: Any) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(o, str) for o in v):
        raise ctx.error("objectives", "must be a list such as [accuracy, train_seconds]")
    for i, o in enumerate(v):
        if o not in DIRECTIONS:
            raise ctx.error(f"objectives.{i}", f"unknown objective {o!r} (allowed: {', '.join(DIRECTIONS)})")
        if o in v[:i]:
            raise ctx.error(f"objectives.{i}", f"{o} is listed twice")
    if "accuracy" not in v or len(v) < 2:
        raise ctx.error("objectives", "must contain accuracy and train_seconds and/or cost")
    return list(v)


def _constraints(ctx: _Ctx, v: Any) -> dict[str, float]:
    v = _mapping(ctx, "constraints", v)
    _check_keys(ctx, "constraints", v, CONSTRAINT_KEYS)
    out = {}
    for key, bound in v.items():
        out[key] = _number(ctx, f"constraints.{key}", bound, low=0.0, low_open=key != "accuracy_min")
        if key == "accuracy_min" and out[key] > 1:
            raise ctx.error(f"constraints.{key}", f"accuracy is a fraction in [0, 1], got {bound}")
    return out


def _sampler(ctx: _Ctx, v: Any, seed: int) -> SamplerSpec:
    from recipesearch.search.samplers import SAMPLER_OPTIONS

    if isinstance(v, str):
        v = {"name": v}
    v = _mapping(ctx, "sampler", v)
    name = v.get("name", "tpe")
    if name not in SAMPLERS:
        raise ctx.error("sampler.name", f"unknown sampler {name!r} (allowed: {', '.join(SAMPLERS)})")
    _check_keys(ctx, "sampler", v, ("name", "seed", *SAMPLER_OPTIONS[name]))
    options = {k: o for k, o in v.items() if k not in ("name", "seed")}
    for k, o in options.items():
        if not isinstance(o, (bool, int, float)):
            raise ctx.error(f"sampler.{k}", f"must be a number or boolean, got {_show(o)}")
    return SamplerSpec(name=name, seed=_integer(ctx, "sampler.seed", v.get("seed", seed)), options=options)


def _resources(ctx: _Ctx, v: Any) -> Resources:
    v = _mapping(ctx, "resources", v)
    _check_keys(ctx, "resources", v, ("cpus", "gpus"))
    return Resources(
        cpus=_number(ctx, "resources.cpus", v.get("cpus", 1), low=0.0, low_open=True),
        gpus=_number(ctx, "resources.gpus", v.get("gpus", 0), low=0.0),
    )


def _get_dotted(data: dict[str, Any], name: str) -> Any:
    node: Any = data
    for part in name.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _recipe_field(name: str) -> tuple[bool, Any]:
    """Whether ``name`` (dotted) is a Recipe field, and its annotation (None for free model kwargs)."""
    model: type[BaseModel] | None = Recipe
    ann: Any = None
    for part in name.split("."):
        if model is None:
            return False, None
        if part not in model.model_fields:
            return model.model_config.get("extra") == "allow", None  # model kwargs: any name
        ann = model.model_fields[part].annotation
        model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    return True, ann


def _int_valued(annotation: Any, ref: Any) -> bool:
    """An int field (rounded products, integer ranges): from the annotation, else from the value's type."""
    if annotation in (int, float):
        return annotation is int
    return isinstance(ref, int) and not isinstance(ref, bool)


def _hparams(ctx: _Ctx, v: Any, base: Recipe) -> tuple[list[ParamSpec], dict[str, Any]]:
    v = _mapping(ctx, "hparams", v)
    base_data = base.model_dump(mode="json")
    specs, fixed = [], {}
    for name, spec in v.items():
        f = f"hparams.{name}"
        name = str(name)
        if name.split(".")[0] in RESERVED_FIELDS:
            raise ctx.error(f, "set by the search space itself (use budgets, seed, threads_per_trial, algorithms)")
        exists, annotation = _recipe_field(name)
        if "/" in name or not exists:
            raise ctx.error(f, "unknown recipe field (write nested fields dotted: optimizer.lr)")
        ref = _get_dotted(base_data, name)

        def check(value: Any, _name: str = name) -> None:
            data = base.to_dict()
            set_dotted(data, _name, value)
            if _name.startswith("model."):
                recipe_from_dict(data)  # builds the model (on the meta device) to check its options
            else:
                try:
                    Recipe.model_validate(data)
                except ValidationError as exc:
                    err = exc.errors()[0]
                    raise ConfigError(_name, err["msg"].removeprefix("Value error, ")) from None

        p = _param(ctx, f, name, spec, ref, check, needs_baseline=True, is_int=_int_valued(annotation, ref))
        if isinstance(p, ParamSpec):
            specs.append(p)
        else:
            fixed[name] = p[0]
    return specs, fixed


def _algorithms(ctx: _Ctx, v: Any, base: Recipe) -> dict[str, AlgorithmSpec]:
    from recipesearch.algorithms import get_algorithm

    v = _mapping(ctx, "algorithms", v)
    out: dict[str, AlgorithmSpec] = {}
    for name, spec in v.items():
        f = f"algorithms.{name}"
        try:
            cls = get_algorithm(str(name))
        except ConfigError as exc:
            raise ctx.error(f, exc.message) from None
        spec = {} if spec is None else spec
        if not isinstance(spec, dict):
            raise ctx.error(f, f"must be a mapping of hyperparameters (or {{}}), got {_show(spec)}")
        always = spec.get("always", False)
        if not isinstance(always, bool):
            raise ctx.error(f"{f}.always", f"must be true or false, got {_show(always)}")
        fields = cls.Params.model_fields
        base_hp = dict(base.algorithms.get(name, {}))
        params, fixed = [], {}
        for hp, hspec in spec.items():
            if hp == "always":
                continue
            hf = f"{f}.{hp}"
            if hp not in fields:
                raise ctx.error(hf, f"unknown hyperparameter of {name} (hyperparameters: {', '.join(fields) or 'none'})")
            ref = base_hp.get(hp, fields[hp].get_default(call_default_factory=True))
            ref = None if type(ref).__name__ == "PydanticUndefinedType" else ref

            def check(value: Any, _hp: str = hp) -> None:
                cls(**{**base_hp, _hp: value})

            needs = always or name in base.algorithms
            is_int = _int_valued(fields[hp].annotation, ref)
            p = _param(ctx, hf, f"{name}.{hp}", hspec, ref, check, needs_baseline=needs, is_int=is_int)
            if isinstance(p, ParamSpec):
                params.append(p)
            else:
                fixed[hp] = p[0]
        out[str(name)] = AlgorithmSpec(str(name), always, tuple(params), fixed, name in base.algorithms)
    _check_pairs(ctx, out, base)
    return out


def _check_pairs(ctx: _Ctx, algos: dict[str, AlgorithmSpec], base: Recipe) -> None:
    """Always-on algorithms must not clash; a candidate that could never be switched on is a mistake."""
    fixed_on = [a for a in base.algorithms if a not in algos] + [a.name for a in algos.values() if a.always]
    for i, name in enumerate(fixed_on):
        if _conflicts(name, fixed_on[:i]):
            other = next(o for o in fixed_on[:i] if _conflicts(name, [o]))
            raise ctx.error(f"algorithms.{name}", f"always on, but forbidden together with {other} (also on in every trial)")
    for alg in algos.values():
        if not alg.always and _conflicts(alg.name, fixed_on):
            other = next(o for o in fixed_on if _conflicts(alg.name, [o]))
            raise ctx.error(f"algorithms.{alg.name}", f"can never be switched on: {other} is on in every trial and forbids it")


# -- one parameter -----------------------------------------------------------------------------------------
def _param(
    ctx: _Ctx,
    f: str,
    name: str,
    spec: Any,
    ref: Any,
    check: Callable[[Any], None],
    needs_baseline: bool,
    is_int: bool,
) -> ParamSpec | tuple[Any]:
    """Parse one parameter spec; a bare value comes back as a 1-tuple (fixed).

    ``needs_baseline``: the baseline trials ask this parameter (a recipe field, or an algorithm on in the
    base recipe or always on), so its base value must be representable (see the module docstring).
    ``is_int``: the field holds an int (products are rounded; ranges default to integers).
    """

    def validate(value: Any, what: str) -> None:
        try:
            check(value)
        except ConfigError as exc:
            raise ctx.error(f, f"{what} gives {value!r}, which is invalid: {exc.message}") from None

    if isinstance(spec, list):
        raise ctx.error(f, "a list is not a parameter; write {choices: [...]} or {grid: [...]}")
    if not isinstance(spec, dict):
        if not (spec is None or isinstance(spec, (bool, int, float, str))):
            raise ctx.error(f, f"must be a parameter mapping or a fixed value, got {_show(spec)}")
        validate(spec, "the fixed value")
        return (spec,)

    kinds = [k for k in KINDS if k in spec]
    if len(kinds) != 1:
        problem = "needs one of" if not kinds else "takes only one of"
        raise ctx.error(f, f"{problem} scale, grid, range, choices (or a bare value to fix it)")
    kind = kinds[0]
    for key in spec:
        if key != kind and key not in _KIND_OPTIONS[kind]:
            allowed = ", ".join((kind, *_KIND_OPTIONS[kind]))
            raise ctx.error(f"{f}.{key}", f"unknown field for a {kind} parameter (allowed: {allowed})")
    kf = f"{f}.{kind}"
    raw = spec[kind]
    flags = {}
    for key in _KIND_OPTIONS[kind]:
        if key in spec and not isinstance(spec[key], bool):
            raise ctx.error(f"{f}.{key}", f"must be true or false, got {_show(spec[key])}")
        flags[key] = spec.get(key)

    relative = kind in ("scale", "grid")
    if relative and (not _is_number(ref) or ref == 0):
        raise ctx.error(kf, f"a relative {kind} needs a nonzero numeric base value, but it is {ref!r}; use range or choices")

    if kind in ("scale", "range"):
        lo, hi = _bounds(ctx, kf, raw)
        log = flags["log"] if flags["log"] is not None else kind == "scale"
        if log and lo <= 0:
            raise ctx.error(kf, f"a log scale needs min > 0, got {lo:g}")
        if kind == "scale" and lo <= 0:
            raise ctx.error(kf, f"multipliers must be > 0, got {lo:g}")
        if kind == "scale":
            for m in (lo, hi):
                validate(_round_half_up(ref * m) if is_int else ref * m, f"{m:g}x")
            start = min(max(1.0, lo), hi)
            baseline = 1.0 if needs_baseline else start
        else:
            is_int = flags["int"] if flags["int"] is not None else is_int
            if is_int and not (float(lo).is_integer() and float(hi).is_integer()):
                raise ctx.error(kf, "an int range needs integer bounds")
            if needs_baseline and not _is_number(ref):
                raise ctx.error(kf, f"the base recipe's value is {ref!r}; the baseline trials need a number here")
            if is_int:
                lo, hi = float(int(lo)), float(int(hi))
            for value in (lo, hi):
                validate(int(value) if is_int else value, "the bound")
            mid = math.sqrt(lo * hi) if log else (lo + hi) / 2
            start = min(max(ref, lo), hi) if _is_number(ref) else mid
            start = int(round(start)) if is_int else float(start)
            baseline = ref if _is_number(ref) and needs_baseline else start
        return ParamSpec(name, f, kind, lo, hi, log, is_int, (), ref, baseline, start)

    # grid / choices
    if not isinstance(raw, list) or not raw:
        raise ctx.error(kf, f"must be a non-empty list, got {_show(raw)}")
    choices: list[Any] = []
    for i, c in enumerate(raw):
        cf = f"{kf}.{i}"
        if relative:
            c = _number(ctx, cf, c, low=0.0, low_open=True)
        elif not (c is None or isinstance(c, (bool, int, float, str))):
            raise ctx.error(cf, f"choices must be numbers, text, booleans or null, got {_show(c)}")
        if any(type(c) is type(d) and c == d for d in choices):
            raise ctx.error(cf, f"{c!r} is listed twice")
        choices.append(c)
        validate(_round_half_up(ref * c) if relative and is_int else (ref * c if relative else c), f"{c!r}")
    if relative:
        start = 1.0 if 1.0 in choices else min(choices, key=lambda m: abs(math.log(m)))
        baseline = 1.0 if needs_baseline else start
    else:
        start = ref if any(type(ref) is type(c) and ref == c for c in choices) else choices[0]
        scalar = ref is None or isinstance(ref, (bool, int, float, str))
        baseline = ref if needs_baseline and scalar else start
    if baseline not in choices:
        choices.append(baseline)  # so the baseline trials can be enqueued (see module docstring)
    return ParamSpec(name, f, kind, None, None, False, relative and is_int, tuple(choices), ref, baseline, start)


def _bounds(ctx: _Ctx, f: str, raw: Any) -> tuple[float, float]:
    if not isinstance(raw, list) or len(raw) != 2:
        raise ctx.error(f, f"must be [min, max], got {_show(raw)}")
    lo = _number(ctx, f"{f}.0", raw[0])
    hi = _number(ctx, f"{f}.1", raw[1])
    if lo > hi:
        raise ctx.error(f, f"min > max ({lo:g} > {hi:g})")
    if lo == hi:
        raise ctx.error(f, f"empty range ({lo:g} to {hi:g}); give a bare value to fix it")
    return lo, hi
