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
from recipesearch.errors import ConfigError
from recipesearch.recipe import Recipe, recipe_from_dict, set_dotted
from recipesearch.space.params import ParamSpec
from recipesearch.space.sampler_spec import SamplerSpec
from recipesearch.space.schema import CONSTRAINT_KEYS, DIRECTIONS, rungs_problem


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


@dataclass(frozen=True)
class Resources:
    """Ray resources of one trial, as the space (or --cpus-per-trial / --gpus-per-trial) asks them:
    ``gpus`` is a number or ``"auto"`` (kept literal: part of the space hash, resolved at run time by
    ``resolve_resources``). With ``workers`` > 1 a trial trains data-parallel on that many workers, and
    ``cpus`` and ``gpus`` are each worker's."""

    cpus: float = 1.0
    gpus: float | str = "auto"
    workers: int = 1

    def override(self, cpus: float | None = None, gpus: float | str | None = None) -> Resources:
        """These resources with the command line's values in place of the space's (None: the space's)."""
        return Resources(cpus=self.cpus if cpus is None else float(cpus),
                         gpus=self.gpus if gpus is None else (gpus if gpus == "auto" else float(gpus)),
                         workers=self.workers)

    def canonical(self) -> dict[str, Any]:
        """For the space hash: ``workers`` only when > 1, so the hashes of one-worker spaces stay as they were."""
        out = asdict(self)
        if self.workers == 1:
            del out["workers"]
        return out


@dataclass(frozen=True)
class TrialResources:
    """What each trial gets on this cluster: ``Resources`` with ``gpus: auto`` resolved."""

    cpus: float
    gpus: float
    auto: bool  # gpus was auto
    cluster_gpus: float
    base_device: str
    workers: int = 1  # data-parallel workers of one trial, each with ``cpus`` and ``gpus``

    def as_dict(self) -> dict[str, Any]:
        """For run.json: the resolved shape, what was asked and the cluster it was resolved on."""
        return {"cpus": self.cpus, "gpus": self.gpus, "gpus_asked": "auto" if self.auto else self.gpus,
                "cluster_gpus": self.cluster_gpus, **({"workers": self.workers} if self.workers > 1 else {})}

    def describe(self) -> str:
        """The run header's words: ``each trial: 1 CPU, 1 GPU (auto: the cluster has 4 GPUs)``."""
        cpu = _count(self.cpus, "CPU")
        have = _count(self.cluster_gpus, "GPU")
        if self.gpus > 0:
            gpu = _count(self.gpus, "GPU")
            per = f"{round(1 / self.gpus):g} trials per GPU; " if self.gpus < 1 else ""
            why = f"auto: the cluster has {have}" if self.auto else f"{per}the cluster has {have}"
        else:
            gpu = "no GPU"
            if not self.cluster_gpus:
                why = "the cluster has none"
            elif self.auto:
                why = f"auto: the base recipe's device is {self.base_device}; the cluster has {have}"
            else:
                why = f"resources.gpus: 0; the cluster has {have}"
        if self.workers > 1:
            return f"each trial: {self.workers} data-parallel workers, each {cpu}, {gpu} ({why})"
        return f"each trial: {cpu}, {gpu} ({why})"


def _count(n: float, unit: str) -> str:
    return f"{n:g} {unit}" + ("s" if n > 1 else "")


def resolve_resources(resources: Resources, cluster_gpus: float, base_device: str) -> TrialResources:
    """``gpus: auto``: one GPU a trial when the cluster has a GPU and the base recipe does not insist on the
    CPU (``device: cpu``), else none. Numbers are kept as asked (``0.5``: two trials share a GPU). A trial
    of N workers gets a GPU per worker under ``auto`` only where the cluster has N GPUs."""
    auto = resources.gpus == "auto"
    wants_gpu = cluster_gpus >= resources.workers and base_device != "cpu"
    gpus = (1.0 if wants_gpu else 0.0) if auto else float(resources.gpus)
    return TrialResources(cpus=float(resources.cpus), gpus=gpus, auto=auto, cluster_gpus=float(cluster_gpus),
                          base_device=base_device, workers=resources.workers)


LR = "optimizer.lr"  # the parameter ``baseline.tune_lr`` sweeps
DEFAULT_VAL_FRACTION = 0.1  # share of train held out when a val-selecting space's base has no split


@dataclass(frozen=True)
class BaselineSpec:
    """``baseline:`` of the space file (schema.BaselineEntry): seeds per budget, LR sweep first or not."""

    seeds: int = 3
    tune_lr: bool = False


@dataclass(frozen=True)
class ConfirmSpec:
    """``confirm:`` of the space file (schema.ConfirmEntry): the confirmation stage after the proposals."""

    enabled: bool = True
    top_k: int = 5
    seeds: int = 3  # seeds in all per (recipe, budget), the proposal's own run included
    max_share: float = 0.4  # of the whole search's compute


@dataclass(frozen=True)
class SimplifySpec:
    """``simplify:`` of the space file (schema.SimplifyEntry): the stage after the confirmation."""

    enabled: bool = False
    budget: float | None = None  # None: the largest budget


@dataclass(frozen=True)
class SchedulerSpec:
    """``scheduler:`` of the space file (schema.SchedulerEntry): early stopping at rungs, promotion across
    budgets (``recipesearch.analysis.rungs``)."""

    name: str = "fifo"
    reduction_factor: int = 3
    min_fraction: float = 1 / 9

    @property
    def prunes(self) -> bool:
        """Trials report at rungs and may be stopped there (MO-ASHA)."""
        return "moasha" in self.name

    @property
    def promotes(self) -> bool:
        """New proposals start at the cheapest budget; the best move up a budget."""
        return "promote" in self.name

    def rungs(self) -> tuple[float, ...]:
        from recipesearch.analysis.rungs import rung_fractions

        return rung_fractions(self.reduction_factor, self.min_fraction) if self.prunes else ()

    def problem(self) -> tuple[str, str] | None:
        """(field under ``scheduler``, message) when it asks for moasha and has no rung (schema.rungs_problem)."""
        return rungs_problem(self.name, self.reduction_factor, self.min_fraction,
                             not math.isclose(self.min_fraction, SchedulerSpec.min_fraction))

    def warning(self, budgets: list[float]) -> str | None:
        """Why this scheduler would do less than its name says with these budgets (None: it does all of it).

        Promotion with one budget has nowhere to promote to: a warning, not a refusal, because the search
        still runs right (as fifo, or moasha) and cutting a space to one budget for a quick run should not
        need a second edit of its scheduler; the line says what is left of it."""
        if self.promotes and len(budgets) == 1:
            rest = "moasha" if self.prunes else "fifo"
            return (f"{self.name} with one budget ({budgets[0]:g}): promotion moves the best proposals up to the "
                    f"next budget and there is none, so nothing is promoted (it runs as {rest}); list more budgets "
                    "or drop promote")
        return None


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
        max_failures: int = 2,
        checkpoint_minutes: float | None = None,
        scheduler: SchedulerSpec = SchedulerSpec(),
        baseline: BaselineSpec = BaselineSpec(),
        confirm: ConfirmSpec = ConfirmSpec(),
        simplify: SimplifySpec = SimplifySpec(),
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
        self.baseline, self.confirm = baseline, confirm
        self.max_failures = max_failures  # retries of a lost worker's trial; not in the hash (operational)
        self.checkpoint_minutes = checkpoint_minutes  # between a trial's checkpoints, None: none (operational)
        self.scheduler = scheduler  # rungs and promotion; not in the hash (operational)
        self.simplify = simplify  # the stage after the confirmation; not in the hash (operational)
        self.path, self.text, self.source = path, text, source
        # Lines about settings that do nothing, found at load (``loading.space_warnings``; ``load_space``
        # prints them): not part of the hash.
        self.warnings: tuple[str, ...] = ()
        # Algorithms on in every trial: base algorithms that are not candidates, and always-on candidates.
        self._fixed_on = [a for a in base.algorithms if a not in algorithms]
        self._fixed_on += [a.name for a in algorithms.values() if a.always and a.name not in self._fixed_on]
        self.hash = hashlib.sha256(self._canonical().encode()).hexdigest()[:12]

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
        new.checkpoint_minutes = minutes or None
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

    def suggest(self, trial: Any) -> dict[str, Any]:
        """Define-by-run: budget, then hparams, then each candidate's switch and (when on) its hparams."""
        params: dict[str, Any] = {"budget": trial.suggest_categorical("budget", list(self.budgets))}
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
        return len(self.lr_sweep()) + self.baseline.seeds * len(self.budgets)

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
            "trials": self.trials, "concurrency": self.concurrency, "resources": self.resources.canonical(),
            "threads_per_trial": self.threads_per_trial, "seed": self.seed, "price_per_hour": self.price_per_hour,
            "fixed": self.fixed, "hparams": [p.canonical() for p in self.hparams],
            "baseline": asdict(self.baseline), "confirm": asdict(self.confirm),
            "algorithms": [a.canonical() for a in self.algorithms.values()],
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


def conflicts(name: str, on: Iterable[str]) -> bool:
    """Switching ``name`` on while ``on`` are on would form a forbidden pair."""
    on = set(on)
    return any((a == name and b in on) or (b == name and a in on) for a, b in forbidden_pairs())
