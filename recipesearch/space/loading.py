"""From YAML to a ``SearchSpace``: the file's shape (``schema.SpaceFile``), then what needs the base recipe
and the algorithm registry: reference values, every sampled value a valid recipe, forbidden pairs."""
from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from recipesearch import shipped
from recipesearch.algorithms import get_algorithm
from recipesearch.errors import ConfigError
from recipesearch.plugins import add_search_dir
from recipesearch.recipe import Recipe, load_recipe, recipe_from_dict, set_dotted
from recipesearch.space.execution import Execution, Resources
from recipesearch.space.messages import Located
from recipesearch.space.param_entries import KindEntry, Target
from recipesearch.space.params import ChoicesParam, GridParam, ParamSpec
from recipesearch.space.sampler_spec import SamplerSpec
from recipesearch.space.schema import RESERVED_FIELDS, AlgorithmEntry, SpaceFile
from recipesearch.space.scoring import DEFAULT_VAL_FRACTION, Scoring
from recipesearch.space.search_space import AlgorithmSpec, Origin, SearchSpace, conflicts
from recipesearch.space.stages import BaselineSpec, ConfirmSpec, SchedulerSpec, SimplifySpec
from recipesearch.yamlio import LineMap, parse_yaml, read_yaml


def load_space(path: str | Path) -> SearchSpace:
    """Read and validate a search-space YAML file; ``base:`` paths are relative to the file. Its warnings
    (settings that do nothing, ``SearchSpace.warnings``) are printed on stderr, once, here: ``loads_space``
    and ``space_from_dict`` only keep them (a resume's hash check loads the recorded copy too)."""
    p = Path(shipped.resolve(path, "space"))  # a bare name: the shipped space (recipesearch spaces)
    data, lines = read_yaml(p)
    add_search_dir(p.parent)  # user code named by import path may sit beside the file
    space = space_from_dict(data, str(p), lines, base_dir=p.parent, text=p.read_text(), path=p)
    for line in space.warnings:
        print(f"warning: {line}", file=sys.stderr)
    return space


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
    where = Located(source, lines)
    if not isinstance(data, dict):
        raise where.error("", "a search space must be a YAML mapping")
    if isinstance(data.get("base"), str):  # the file's import paths are checked below: code beside the base recipe
        add_search_dir((Path(base_dir or ".") / Path(data["base"]).expanduser()).parent)  # imports from here on
    try:
        file = SpaceFile.model_validate(data)
    except ValidationError as exc:
        raise where.from_pydantic(exc) from None

    base = _base(where, file.base, base_dir)
    if file.metric_split == "val" and base.data.val_fraction <= 0:
        # Selecting on validation needs a validation split: hold out the default share of train.
        data = base.to_dict()
        data["data"]["val_fraction"] = DEFAULT_VAL_FRACTION
        base = recipe_from_dict(data, source=f"{where.source} (base with data.val_fraction {DEFAULT_VAL_FRACTION})")
    hparams, fixed = _hparams(where, file.hparams, base)
    if file.baseline.tune_lr and "optimizer.lr" not in {p.name for p in hparams}:
        raise where.error("baseline.tune_lr", "needs hparams.optimizer.lr (the LR ladder to sweep), "
                                              "e.g. optimizer.lr: {scale: [0.5, 2]}")
    algorithms = {name: _algorithm(where, name, entry, base) for name, entry in file.algorithms.items()}
    _check_pairs(where, algorithms, base)

    space = SearchSpace(
        name=file.name if file.name is not None else (Path(source).stem if path is not None else "search"),
        base=base, budgets=file.budgets, seed=file.seed, hparams=hparams, fixed=fixed, algorithms=algorithms,
        sampler=SamplerSpec(name=file.sampler.name, seed=file.sampler_seed, options=file.sampler.options),
        scoring=Scoring(objectives=file.objectives, metric_split=file.metric_split,
                        constraints=file.constraints.as_dict(), price_per_hour=file.price_per_hour,
                        target=file.target),
        execution=Execution(trials=file.trials, concurrency=file.concurrency,
                            resources=Resources(cpus=file.resources.cpus, gpus=file.resources.worker_gpus,
                                                workers=file.resources.workers),
                            threads_per_trial=file.threads, max_failures=file.max_failures,
                            checkpoint_minutes=file.checkpoint_minutes or None, search_budget=file.search_budget,
                            warm_start=tuple(str(Path(base_dir or ".") / d) for d in file.warm_start)),
        scheduler=SchedulerSpec(name=file.scheduler.name, reduction_factor=file.scheduler.reduction_factor,
                                min_fraction=file.scheduler.min_fraction),
        baseline=BaselineSpec(seeds=file.baseline.seeds, tune_lr=file.baseline.tune_lr,
                              seeds_elsewhere=file.baseline.seeds_elsewhere),
        confirm=ConfirmSpec(enabled=file.confirm.enabled, top_k=file.confirm.top_k, seeds=file.confirm.seeds,
                            max_share=file.confirm.max_share, sequential=file.confirm.sequential,
                            paired_baseline=file.confirm.paired_baseline, early=file.confirm.early,
                            stop_at_claim=file.confirm.stop_at_claim),
        simplify=SimplifySpec(enabled=file.simplify.enabled, budget=file.simplify.budget),
        origin=Origin(path=Path(path) if path is not None else None, source=source,
                      text=text if text is not None else yaml.safe_dump(data, sort_keys=False)),
    )
    # The baseline must be a valid recipe at every budget (catches e.g. a fixed value that breaks it).
    for b in space.budgets:
        try:
            space.recipe_for(space.baseline_params(b))
        except ConfigError as exc:
            problem = f"the baseline at budget {b} is not a valid recipe: {exc.field}: {exc.message}"
            raise where.error("base", problem) from None
    # Every combination a trial can reach is checked here, not trial by trial (issue 32).
    _check_workers(where, space)
    _check_candidates(where, space)
    _check_flip_tta(where, space)
    _check_classes(where, space)
    space.warnings = tuple(space_warnings(where, file, space))
    return space


# -- what trials can reach: checked once, at load ---------------------------------------------------------
def _values(spec: ParamSpec) -> list[Any]:
    """The recipe values a sampled parameter gives: every choice (grid, choices), else both ends of its
    range (scale, range: everything in between is reachable too)."""
    if isinstance(spec, (ChoicesParam, GridParam)):
        return [spec.value(c) for c in spec.choices]
    return [spec.value(spec.low), spec.value(spec.high)]


def reachable(space: SearchSpace, name: str) -> list[Any]:
    """The values recipe field ``name`` (dotted: ``data.hflip``) takes in the space's trials: a sampled
    parameter's (``_values``), the fixed one, else the base recipe's (None: not set)."""
    if name in space.fixed:
        return [space.fixed[name]]
    spec = next((p for p in space.hparams if p.name == name), None)
    return _values(spec) if spec is not None else [_get_dotted(space.base.to_dict(), name)]


def reachable_hparam(space: SearchSpace, algorithm: str, hp: str) -> list[Any]:
    """The values hyperparameter ``hp`` of ``algorithm`` takes in trials where it is on (as ``recipe_for``
    builds them: the base recipe's, then the space's fixed value, then the sampled one)."""
    alg = space.algorithms.get(algorithm)
    if alg is not None:
        if hp in alg.fixed:
            return [alg.fixed[hp]]
        spec = next((p for p in alg.params if p.hparam == hp), None)
        if spec is not None:
            return _values(spec)
    base_hp = space.base.algorithms.get(algorithm, {})
    if hp in base_hp:
        return [base_hp[hp]]
    return [get_algorithm(algorithm).Params.model_fields[hp].get_default(call_default_factory=True)]


def can_be_on(space: SearchSpace, algorithm: str) -> bool:
    """Some trial of the space trains with ``algorithm`` (on in every trial, or a candidate; a candidate that
    could never be switched on was refused by ``_check_pairs``)."""
    return algorithm in space.algorithms or algorithm in space.algorithms_on({})


def _check_workers(where: Located, space: SearchSpace) -> None:
    """Data-parallel workers split each batch equally: the base recipe's batch and every batch_size the
    space can sample must divide (one that does not would fail its trial with the same words,
    ``train/distributed.py``)."""
    workers = space.resources.workers
    if workers <= 1:
        return
    batch = space.recipe_for(space.baseline_params(space.budgets[0])).batch_size
    if batch % workers:
        raise where.error("resources.workers", f"{workers} workers cannot share the base recipe's batch_size "
                                               f"{batch} equally (each worker trains batch_size / workers a step)")
    spec = next((p for p in space.hparams if p.name == "batch_size"), None)
    if spec is None:
        return  # a fixed batch_size is the baseline's, checked above
    share = f"cannot be shared equally by resources.workers {workers} (each worker trains batch_size / workers a step)"
    if isinstance(spec, (ChoicesParam, GridParam)):
        values = [int(v) for v in _values(spec)]
        bad = [v for v in values if v % workers]
        if bad:
            listed = ", ".join(str(v) for v in values)
            raise where.error(spec.field, f"batch_size {bad[0]} (of the batch sizes it samples: {listed}) {share}; "
                                          f"give only multiples of {workers}")
        return
    lo, hi = (float(v) for v in _values(spec))  # scale, range: every integer between the two ends
    first = next((v for v in range(math.ceil(lo), math.floor(hi) + 1) if v % workers), None)
    if first is not None:
        raise where.error(spec.field, f"it samples every batch_size from {math.ceil(lo)} to {math.floor(hi)}, and "
                                      f"{first} {share}; list multiples of {workers} instead, "
                                      f"e.g. {{choices: [{workers * 16}, {workers * 32}]}}")


def _check_candidates(where: Located, space: SearchSpace) -> None:
    """Each candidate switched on alone (its hyperparameters at their start values) makes a valid recipe:
    what the recipe check refuses of its methods (``build_algorithms``: hyperparameters together,
    interactions) is refused here, naming the candidate, instead of in every trial that switches it on.
    The rest of ``recipe_from_dict`` (the model built on the meta device: 0.2 s for a ResNet-56) does not
    change with a switch and was checked with the baseline."""
    from recipesearch.algorithms import build_algorithms

    switches = [a for a in space.algorithms.values() if not a.always]
    for alg in switches:
        partial = {"budget": space.budgets[0], **{a.switch: a is alg for a in switches}}
        try:
            data = space.recipe_data(space.complete(partial))
            build_algorithms(data["algorithms"], recipe=Recipe.model_validate(data))
        except ValidationError as exc:
            err = exc.errors()[0]
            problem = f"switched on, it makes an invalid recipe: {'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
            raise where.error(f"algorithms.{alg.name}", problem) from None
        except ConfigError as exc:
            problem = f"switched on, it makes an invalid recipe: {exc.field}: {exc.message}"
            raise where.error(f"algorithms.{alg.name}", problem) from None


# Whether a horizontal mirror keeps the class, per dataset, without loading it: each loader's
# ``RawDataset.hflip`` (data/digits.py etc.; tests/space/test_reachable_combinations.py holds them equal).
# A dataset not listed (a user's loader, a plugin's) is left to flip_tta's own check when a trial starts.
DATASET_HFLIP = {"digits": False, "fashion_mnist": True, "cifar10": True, "imagefolder": True}


def _check_flip_tta(where: Located, space: SearchSpace) -> None:
    """flip_tta and alternating_flip refuse, when training starts, a dataset whose mirror may be another class
    (``data.hflip`` false, or digits): every trial that can have one on with such data would fail, so the
    space is refused. ``force: true`` (a control) passes, as there."""
    for method in MIRRORING_METHODS:
        if not can_be_on(space, method) or all(f is True for f in reachable_hparam(space, method, "force")):
            continue
        for name in reachable(space, "data.name"):
            for hflip in reachable(space, "data.hflip"):
                keeps = DATASET_HFLIP.get(str(name)) if hflip is None else hflip
                if keeps is False:
                    field = f"algorithms.{method}" if method in space.algorithms else f"base.algorithms.{method}"
                    data = f"dataset {name}" + (" with data.hflip false" if hflip is False else "")
                    raise where.error(field, f"{data} does not allow a horizontal flip (a mirrored image may be "
                                             f"another class), so every trial with {method} on would fail; remove "
                                             f"{method} from the space, or set data.hflip: true where a mirror keeps "
                                             "the class")


MIRRORING_METHODS = ("flip_tta", "alternating_flip")  # methods that refuse data whose mirror changes the class


def _check_classes(where: Located, space: SearchSpace) -> None:
    """An image folder of one class trains to 100 % and says nothing: refused at load when the folder is
    here to look at (``data/imagefolder.py`` refuses it again where the trial lists it, on any node)."""
    from recipesearch.data.imagefolder import class_problem

    for name in reachable(space, "data.name"):
        if name != "imagefolder":
            continue
        for root in reachable(space, "data.root"):
            problem = class_problem(space.base.data.model_copy(update={"name": name, "root": root}))
            if problem:
                raise where.error("base.data.root", problem)


def space_warnings(where: Located, file: SpaceFile, space: SearchSpace) -> list[str]:
    """Settings of the file that do nothing, one line each (``source:line: field: what``)."""
    out = []
    scheduler = space.scheduler
    warning = scheduler.warning(space.budgets)
    if warning:
        out.append(str(where.error("scheduler", warning)))
    given = file.scheduler.model_fields_set
    if "min_fraction" in given and not scheduler.prunes:
        out.append(str(where.error("scheduler.min_fraction", f"does nothing with scheduler {scheduler.name}: only "
                                                             "moasha's rungs use it")))
    if "reduction_factor" in given and scheduler.name == "fifo":
        out.append(str(where.error("scheduler.reduction_factor", "does nothing with scheduler fifo: moasha and "
                                                                 "promote use it")))
    return out


def _base(where: Located, base: str | dict[Any, Any], base_dir: str | Path | None) -> Recipe:
    if isinstance(base, str):
        p = Path(base).expanduser()
        if not p.is_absolute():
            p = Path(base_dir or ".") / p
        if not p.is_file():
            raise where.error("base", f"recipe file not found: {p}")
        return load_recipe(p)  # its errors name the recipe file and line
    sub = LineMap({k[5:]: n for k, n in (where.lines or {}).items() if k.startswith("base.")})
    try:
        return recipe_from_dict(base, where.source, sub)
    except ConfigError as exc:
        raise where.error(f"base.{exc.field}" if exc.field else "base", exc.message) from None


# -- hparams: recipe fields ---------------------------------------------------------------------------------
def _hparams(where: Located, entries: dict[str, Any], base: Recipe) -> tuple[list[ParamSpec], dict[str, Any]]:
    base_data = base.model_dump(mode="json")
    specs, fixed = [], {}
    for name, entry in entries.items():
        f = f"hparams.{name}"
        if name.split(".")[0] in RESERVED_FIELDS:
            raise where.error(f, "set by the search space itself (use budgets, seed, threads_per_trial, algorithms)")
        exists, annotation = _recipe_field(name)
        if "/" in name or not exists:
            raise where.error(f, "unknown recipe field (write nested fields dotted: optimizer.lr)")
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

        target = Target(name, f, ref, _int_valued(annotation, ref), True, check, where)
        if isinstance(entry, KindEntry):
            specs.append(entry.to_param(target))
        else:
            target.validate(entry, "the fixed value")
            fixed[name] = entry
    return specs, fixed


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


# -- algorithms: candidates and their hyperparameters ----------------------------------------------------
def _algorithm(where: Located, name: str, entry: AlgorithmEntry, base: Recipe) -> AlgorithmSpec:
    cls = get_algorithm(name)  # the schema checked the name and the hyperparameter names
    fields = cls.Params.model_fields
    base_hp = dict(base.algorithms.get(name, {}))
    # The baseline trials ask its hyperparameters when it is on in the base recipe or always on.
    needs_baseline = entry.always or name in base.algorithms
    params, fixed = [], {}
    for hp, hentry in entry.hyperparameters.items():
        ref = base_hp.get(hp, fields[hp].get_default(call_default_factory=True))
        ref = None if type(ref).__name__ == "PydanticUndefinedType" else ref  # a required hyperparameter

        def check(value: Any, _hp: str = hp) -> None:
            cls(**{**base_hp, _hp: value})

        is_int = _int_valued(fields[hp].annotation, ref)
        target = Target(f"{name}.{hp}", f"algorithms.{name}.{hp}", ref, is_int, needs_baseline, check, where)
        if isinstance(hentry, KindEntry):
            params.append(hentry.to_param(target))
        else:
            target.validate(hentry, "the fixed value")
            fixed[hp] = hentry
    return AlgorithmSpec(name, entry.always, tuple(params), fixed, name in base.algorithms)


def _check_pairs(where: Located, algos: dict[str, AlgorithmSpec], base: Recipe) -> None:
    """Always-on algorithms must not clash; a candidate that could never be switched on is a mistake."""
    fixed_on = [a for a in base.algorithms if a not in algos] + [a.name for a in algos.values() if a.always]
    for i, name in enumerate(fixed_on):
        if conflicts(name, fixed_on[:i]):
            other = next(o for o in fixed_on[:i] if conflicts(name, [o]))
            problem = f"always on, but forbidden together with {other} (also on in every trial)"
            raise where.error(f"algorithms.{name}", problem)
    for alg in algos.values():
        if not alg.always and conflicts(alg.name, fixed_on):
            other = next(o for o in fixed_on if conflicts(alg.name, [o]))
            problem = f"can never be switched on: {other} is on in every trial and forbids it"
            raise where.error(f"algorithms.{alg.name}", problem)
