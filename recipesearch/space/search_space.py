"""``SearchSpace``: a validated space, what the sampler asks of it and how a trial's params become a recipe.

See the package docstring for the params dict naming, the baselines and the hash.
"""
from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

from recipesearch.algorithms.interactions import forbidden_pairs
from recipesearch.analysis.target import describe_seeds
from recipesearch.errors import ConfigError
from recipesearch.recipe import Recipe, recipe_from_dict, set_dotted
from recipesearch.space.execution import Execution, Resources
from recipesearch.space.params import ParamSpec
from recipesearch.space.sampler_spec import SamplerSpec
from recipesearch.space.scoring import Scoring
from recipesearch.space.stages import BaselineSpec, ConfirmSpec, SchedulerSpec, SimplifySpec


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

    def canonical(self) -> dict[str, Any]:
        """Every attribute, for the space hash."""
        return {"name": self.name, "always": self.always, "params": [p.canonical() for p in self.params],
                "fixed": self.fixed, "in_base": self.in_base}


LR = "optimizer.lr"  # the parameter ``baseline.tune_lr`` sweeps


@dataclass(frozen=True)
class Origin:
    """Where a space was read from: ``path`` (None: not from a file), ``text`` (the exact source YAML) and
    ``source`` (the name errors carry). Not part of the space hash."""

    path: Path | None = None
    text: str = ""
    source: str = "<string>"


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
    """A validated search space; build it with ``load_space`` / ``space_from_dict`` (see the package docstring).

    What trials are made of is held here (base, budgets, hparams, fixed values, algorithms, seed, sampler);
    the rest comes in groups: ``scoring`` (objectives, selection split, constraints, price), ``execution``
    (trials, concurrency, resources, threads, retries, checkpoints), the stages and the scheduler, and
    ``origin`` (path, text, source). The groups' fields read as attributes too (``space.trials``)."""

    def __init__(
        self,
        *,
        name: str,
        base: Recipe,
        budgets: list[float],
        seed: int,
        hparams: list[ParamSpec],
        fixed: dict[str, Any],
        algorithms: dict[str, AlgorithmSpec],
        sampler: SamplerSpec,
        scoring: Scoring,
        execution: Execution,
        scheduler: SchedulerSpec,
        baseline: BaselineSpec,
        confirm: ConfirmSpec,
        simplify: SimplifySpec,
        origin: Origin = Origin(),
    ):
        self.name, self.base, self.budgets, self.seed = name, base, budgets, seed
        self.hparams, self.fixed, self.algorithms, self.sampler = hparams, fixed, algorithms, sampler
        self.scoring, self.execution, self.origin = scoring, execution, origin
        self.baseline, self.confirm = baseline, confirm
        self.scheduler = scheduler  # rungs and promotion; not in the hash (operational)
        self.simplify = simplify  # the stage after the confirmation; not in the hash (operational)
        # Lines about settings that do nothing, found at load (``loading.space_warnings``; ``load_space``
        # prints them): not part of the hash.
        self.warnings: tuple[str, ...] = ()
        # Algorithms on in every trial: base algorithms that are not candidates, and always-on candidates.
        self._fixed_on = [a for a in base.algorithms if a not in algorithms]
        self._fixed_on += [a.name for a in algorithms.values() if a.always and a.name not in self._fixed_on]
        self.hash = hashlib.sha256(self._canonical().encode()).hexdigest()[:12]

    # -- the groups' fields, read as the space's own attributes -------------------------------------------
    @property
    def objectives(self) -> list[str]:
        return self.scoring.objectives

    @property
    def directions(self) -> list[str]:
        return self.scoring.directions

    @property
    def metric_split(self) -> Literal["test", "val"]:
        return self.scoring.metric_split

    @property
    def target(self) -> str | float:
        return self.scoring.target

    @property
    def selection_column(self) -> str:
        """The trials column selection reads: ``val_accuracy`` or ``accuracy`` (test), per ``metric_split``."""
        return self.scoring.selection_column

    @property
    def constraints(self) -> dict[str, float]:
        return self.scoring.constraints

    @property
    def price_per_hour(self) -> float | None:
        return self.scoring.price_per_hour

    @property
    def trials(self) -> int:
        return self.execution.trials

    @property
    def concurrency(self) -> int:
        return self.execution.concurrency

    @property
    def resources(self) -> Resources:
        return self.execution.resources

    @property
    def threads_per_trial(self) -> int:
        return self.execution.threads_per_trial

    @property
    def max_failures(self) -> int:
        return self.execution.max_failures

    @property
    def search_budget(self) -> float | None:
        return self.execution.search_budget

    @property
    def warm_start(self) -> tuple[str, ...]:
        return self.execution.warm_start

    @property
    def checkpoint_minutes(self) -> float | None:
        return self.execution.checkpoint_minutes

    @property
    def path(self) -> Path | None:
        return self.origin.path

    @property
    def text(self) -> str:
        return self.origin.text

    @property
    def source(self) -> str:
        return self.origin.source

    def with_scheduler(self, **changes: Any) -> SearchSpace:
        """A copy of this space with ``scheduler`` fields changed (``name="moasha"``, ``min_fraction=1/3``):
        operational, so the hash stays (``--scheduler``, replay). The space itself is left as it was."""
        import copy
        import sys

        new = copy.copy(self)
        new.scheduler = replace(self.scheduler, **changes)
        problem = new.scheduler.problem()
        if problem:  # --scheduler moasha on a space whose min_fraction / reduction_factor leave it no rung
            raise ConfigError(f"scheduler.{problem[0]}", f"with scheduler {new.scheduler.name}: {problem[1]}",
                              self.source)
        warning = new.scheduler.warning(self.budgets)
        if warning and warning != self.scheduler.warning(self.budgets):  # the space's own was printed at load
            line = f"scheduler: {warning}"
            new.warnings = (*self.warnings, line)
            print(f"warning: {line}", file=sys.stderr)
        return new

    def with_simplify(self, enabled: bool = True) -> SearchSpace:
        """A copy with the simplify stage on (or off); operational, the hash stays (``--simplify``)."""
        import copy

        if enabled and not self.confirm.enabled:
            raise ConfigError("simplify", "works on the confirmation's recipes: it needs the confirmation stage "
                                          "(confirm: true)", self.source)
        new = copy.copy(self)
        new.simplify = replace(self.simplify, enabled=enabled)
        return new

    def with_checkpoint_minutes(self, minutes: float | None) -> SearchSpace:
        """A copy with ``checkpoint_minutes`` changed (0 or None: no checkpoints); operational, the hash stays."""
        import copy

        new = copy.copy(self)
        new.execution = replace(self.execution, checkpoint_minutes=minutes or None)
        return new

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

    def suggest(self, trial: Any, queued_budget: float | None = None) -> dict[str, Any]:
        """Define-by-run: budget, then hparams, then each candidate's switch and (when on) its hparams.
        ``queued_budget``: the budget the trial was queued with; one past the space's largest (a confirmation run's,
        engine/confirm.py) is given, not asked: no choice holds it."""
        past = queued_budget is not None and float(queued_budget) > max(self.budgets)
        params: dict[str, Any] = {"budget": float(queued_budget) if past
                                  else trial.suggest_categorical("budget", list(self.budgets))}
        for p in self.hparams:
            params[p.name] = p.suggest(trial)
        on = set(self._fixed_on)
        for alg in self.algorithms.values():
            if not alg.always:
                if conflicts(alg.name, on):
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

    def baseline_params(self, budget: float, lr: Any = None) -> dict[str, Any]:
        """The params that reproduce the base recipe at ``budget`` (see module docstring); ``lr``: the
        ``optimizer.lr`` parameter the LR sweep chose (None: the base LR)."""
        partial: dict[str, Any] = {"budget": float(budget)}
        if lr is not None:
            partial[LR] = lr
        return self.complete(partial)

    def baselines(self, lr: Any = None) -> list[dict[str, Any]]:
        return [self.baseline_params(b, lr) for b in self.budgets]

    def lr_sweep(self) -> list[dict[str, Any]]:
        """``baseline.tune_lr``: the base recipe at the budget nearest 1 with its LR and the LR two ladder
        steps down and up (empty when the space does not tune the LR)."""
        spec = next((p for p in self.hparams if p.name == LR), None)
        if not self.baseline.tune_lr or spec is None:
            return []
        budget = min(self.budgets, key=lambda b: (abs(math.log(b)), b))
        values = [spec.baseline, *spec.neighbours(spec.baseline, 2)]
        return [self.baseline_params(budget, v) for v in values]

    @property
    def baseline_runs(self) -> int:
        """Trials the baseline takes before any proposal: the LR sweep and every budget x seed."""
        return len(self.lr_sweep()) + sum(self.baseline.seeds_at(b, self.budgets) for b in self.budgets)

    def describe_baseline(self) -> str:
        """The baseline's runs in words (``analysis.target.describe_seeds``)."""
        return describe_seeds(self.budgets, self.baseline.seeds, self.baseline.seeds_elsewhere)

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
    def recipe_for(self, params: dict[str, Any], seed_index: int = 0) -> Recipe:
        """The trial's recipe: base + multipliers/values + algorithms + budget, seed and threads.

        ``seed_index`` > 0 is a repeat of the same recipe (baseline seeds, confirmation): seed
        ``space.seed + seed_index``. The data split does not move with it (``data.split_seed``)."""
        return recipe_from_dict(self.recipe_data(params, seed_index), source="trial params")

    def recipe_data(self, params: dict[str, Any], seed_index: int = 0) -> dict[str, Any]:
        """What ``recipe_for`` validates into the trial's recipe: the mapping, not yet checked."""
        src = "trial params"
        known = set(self.param_names())
        for key in params:
            if key not in known:
                problem = f"unknown parameter of this search space (known: {', '.join(sorted(known))})"
                raise ConfigError(key, problem, src)

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
        data.update(algorithms=algos, budget=float(get("budget")), seed=self.seed + int(seed_index),
                    threads=self.threads_per_trial)
        return data

    # -- objectives (``Scoring``) --------------------------------------------------------------------
    def cost(self, train_seconds: float) -> float | None:
        return self.scoring.cost(train_seconds)

    def objective_values(self, accuracy: float, train_seconds: float) -> list[float]:
        return self.scoring.objective_values(accuracy, train_seconds)

    def constraint_dict(self, accuracy: float, train_seconds: float) -> dict[str, float]:
        return self.scoring.constraint_dict(accuracy, train_seconds)

    def constraints_values(self, accuracy: float, train_seconds: float) -> list[float]:
        return self.scoring.constraints_values(accuracy, train_seconds)

    # -- identity -------------------------------------------------------------------------------------
    def _canonical(self) -> str:
        content = {
            "base": self.base.to_dict(), "budgets": self.budgets, "objectives": self.objectives,
            "metric_split": self.metric_split, "constraints": self.constraints, "sampler": asdict(self.sampler),
            "trials": self.trials, "concurrency": self.concurrency, "resources": self.resources.canonical(),
            "threads_per_trial": self.threads_per_trial, "seed": self.seed, "price_per_hour": self.price_per_hour,
            "fixed": self.fixed, "hparams": [p.canonical() for p in self.hparams],
            "baseline": asdict(self.baseline), "confirm": asdict(self.confirm),
            "algorithms": [a.canonical() for a in self.algorithms.values()],
        }
        content["base"].pop("name", None)
        if self.baseline.seeds_elsewhere is None:  # the hash of a space from before the option stays what it was
            content["baseline"].pop("seeds_elsewhere")
        if not self.confirm.sequential:  # the hash of a space from before the option stays what it was
            content["confirm"].pop("sequential")
        for key in ("paired_baseline", "early"):  # nor do later options' defaults
            if content["confirm"][key] == getattr(ConfirmSpec(), key):
                content["confirm"].pop(key)
        content["confirm"].pop("stop_at_claim")  # operational: a resume may lift it and search on
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


def conflicts(name: str, on: Iterable[str]) -> bool:
    """Switching ``name`` on while ``on`` are on would form a forbidden pair."""
    on = set(on)
    return any((a == name and b in on) or (b == name and a in on) for a, b in forbidden_pairs())
