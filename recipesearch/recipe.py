"""A recipe: base training setup + speed-up algorithms with their hyperparameters + a budget.

A recipe file is YAML::

    model: {name: resnet8}
    data: {name: digits}
    optimizer: {name: sgd, lr: 0.1, momentum: 0.9, weight_decay: 5.0e-4}
    schedule: {name: cosine, warmup_epochs: 1}
    max_duration: 10      # epochs at budget 1.0
    budget: 1.0           # scale_schedule_ratio: epochs and every schedule milestone are multiplied by it
    batch_size: 128
    precision: fp32
    seed: 0
    algorithms: {label_smoothing: {smoothing: 0.1}}

Validation errors name the field and its line; ``recipe_id`` is a hash of the content, stable across
load → dump → load.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_serializer, model_validator

from recipesearch.data.spec import RUNTIME_FIELDS, DataSpec
from recipesearch.errors import ConfigError
from recipesearch.plugins import SEP, add_search_dir, is_import_path
from recipesearch.yamlio import LineMap, parse_yaml, read_yaml


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelSpec(BaseModel):
    """``name`` from the model registry; any other key is passed to the constructor (width, ...)."""

    model_config = ConfigDict(extra="allow")
    name: str = "resnet20"

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


MUON_FIELDS = ("muon_lr", "muon_momentum", "ns_steps", "muon_rest", "muon_normalize", "ns_precision")


class OptimizerSpec(_Strict):
    """SGD with Nesterov momentum and decoupled weight decay (Loshchilov & Hutter 2019), AdamW, or Muon.

    ``muon`` (``recipesearch/train/muon.py``, defaults from airbench94_muon.py) orthogonalises the momentum
    of the hidden conv/linear weight matrices; the first and last layers and the 1-D parameters are
    trained by ``muon_rest`` with the fields above (lr, momentum, nesterov, weight_decay, betas).
    ``sgd_schedulefree`` / ``adamw_schedulefree`` (``recipesearch/train/schedule_free.py``, the ``schedulefree``
    extra) evaluate a running average of the weights and take only the schedule's warmup, never its decay.
    """

    name: Literal["sgd", "adamw", "muon", "sgd_schedulefree", "adamw_schedulefree"] = "sgd"
    lr: float = Field(0.1, gt=0, description="peak learning rate, reached after warmup")
    momentum: float = Field(0.9, ge=0, lt=1)
    nesterov: bool = True
    # Decoupled: each step multiplies weights by (1 - weight_decay * lr / peak_lr), so the decay does not
    # change when the LR is re-tuned (Composer's DecoupledSGDW convention).
    weight_decay: float = Field(5e-4, ge=0)
    betas: tuple[float, float] = (0.9, 0.999)
    decay_norm_and_bias: bool = False  # BN/bias weights decayed too? off: the usual strong baseline
    # Muon only (name: muon). The schedule scales muon_lr like lr; weight_decay applies to both parts.
    muon_lr: float = Field(0.24, gt=0, description="Muon's peak LR (~ the spectral norm of each update)")
    muon_momentum: float = Field(0.6, ge=0, lt=1, description="Muon's Nesterov momentum (airbench: 0.6)")
    ns_steps: int = Field(5, ge=1, le=20, description="Newton-Schulz iterations (more: closer to orthogonal)")
    muon_rest: Literal["sgd", "adamw"] = Field("sgd", description="optimizer of the params Muon does not take")
    # airbench94_muon.py resets each filter bank to norm sqrt(out_channels) before its step: right where BN
    # follows the layer (every conv of the library's models), a change of function elsewhere.
    muon_normalize: bool = True
    ns_precision: Literal["auto", "bf16", "fp32"] = Field(
        "auto", description="Newton-Schulz matmuls: auto = bf16 on CUDA, fp32 elsewhere (train/muon.py: faster on CPU)")

    @model_serializer(mode="wrap")
    def _muon_fields_only_for_muon(self, handler: Any) -> dict[str, Any]:
        # A recipe id hashes the dump: a recipe that does not use Muon keeps the id it had before Muon's
        # fields existed, and Muon settings that cannot change its training do not change its id.
        data = handler(self)
        if self.name != "muon":
            for key in MUON_FIELDS:
                data.pop(key, None)
        return data

    @model_validator(mode="after")
    def _nesterov_needs_momentum(self) -> OptimizerSpec:
        sgd = self.name == "sgd" or (self.name == "muon" and self.muon_rest == "sgd")
        if sgd and self.nesterov and self.momentum == 0:
            raise ValueError("nesterov needs momentum > 0")
        return self


class ScheduleSpec(_Strict):
    """A learning-rate schedule declared in epochs (at budget 1.0) and executed per step."""

    name: Literal["cosine", "linear", "onecycle", "multistep", "constant"] = "cosine"
    warmup_epochs: float = Field(0.0, ge=0)
    milestones: list[float] = Field(default_factory=list, description="multistep: epochs where LR *= gamma")
    gamma: float = Field(0.1, gt=0, le=1)
    final_lr_factor: float = Field(0.0, ge=0, le=1, description="LR at the end, as a fraction of peak")
    pct_start: float = Field(0.25, gt=0, lt=1, description="onecycle: fraction of training spent rising")

    @field_validator("milestones")
    @classmethod
    def _sorted_positive(cls, v: list[float]) -> list[float]:
        if any(m <= 0 for m in v):
            raise ValueError("milestones must be > 0 epochs")
        if v != sorted(v):
            raise ValueError("milestones must be increasing")
        return v


# Values that validate as numbers but cannot be meant: refused with the limit named.
MAX_EPOCHS = 10_000  # max_duration x budget
MIN_BUDGET, MAX_BUDGET = 1e-3, 1e3
MAX_BATCH = 65_536


class Recipe(_Strict):
    name: str | None = None
    model: ModelSpec = Field(default_factory=ModelSpec)
    data: DataSpec
    optimizer: OptimizerSpec = Field(default_factory=OptimizerSpec)
    schedule: ScheduleSpec = Field(default_factory=ScheduleSpec)
    max_duration: float = Field(..., gt=0, le=MAX_EPOCHS, description="epochs at budget 1.0")
    budget: float = Field(1.0, ge=MIN_BUDGET, le=MAX_BUDGET,
                          description="scale_schedule_ratio: multiplies epochs and schedule")
    batch_size: int = Field(128, gt=0, le=MAX_BATCH)
    eval_batch_size: int = Field(1024, gt=0, le=MAX_BATCH)
    precision: Literal["fp32", "bf16", "fp16"] = "fp32"
    seed: int = Field(0, ge=0, lt=2**32, description="numpy and torch seeds; < 2**32 (numpy's limit)")
    threads: int | None = Field(None, gt=0, description="torch threads for this run (None: leave as is)")
    device: str = "auto"
    algorithms: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str:
        if v not in ("auto", "cpu", "cuda", "mps") and not v.startswith("cuda:"):
            raise ValueError("allowed: auto, cpu, cuda, cuda:N, mps")
        return v

    @field_validator("algorithms", mode="before")
    @classmethod
    def _none_means_defaults(cls, v: Any) -> Any:
        # ``algorithms: {mixup: }`` and ``algorithms: [mixup, ema]`` both mean "with defaults".
        if isinstance(v, list) and all(isinstance(n, str) for n in v):
            return {n: {} for n in v}
        if isinstance(v, dict):
            return {k: ({} if p is None else p) for k, p in v.items()}
        return v

    @property
    def epochs(self) -> float:
        """Epochs actually trained: max_duration dilated by the budget."""
        return self.max_duration * self.budget

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)

    def id(self) -> str:
        return recipe_id(self)

    def with_overrides(self, overrides: dict[str, Any]) -> Recipe:
        """A copy with dotted-key overrides applied (``optimizer.lr=0.2``) and re-validated.

        Switching ``model.name`` drops the old model's own options (a ``cnn`` ``width`` means something else,
        or nothing, to a ResNet); options for the new model are given as further ``model.*`` overrides.

        None (``--set algorithms.mixup=null``) at a method removes it, as if the recipe did not name it
        (``algorithms=null``: every method); ``{}`` switches a method on with its defaults. Elsewhere None is
        set as given (``data.hflip=null``: the dataset's own choice; a required field refuses it).
        """
        data = self.to_dict()
        new_model = overrides.get("model.name")
        if new_model is not None and new_model != self.model.name:
            data["model"] = {"name": new_model}
        removed = _removed_methods(overrides)
        removed_names = {dotted_parts(key)[1] for key in removed}
        for key, value in overrides.items():
            parts = dotted_parts(key)
            if parts[0] == "algorithms" and len(parts) > 2 and parts[1] in removed_names:
                raise ConfigError(key, f"set while algorithms.{parts[1]}=null removes {parts[1]}; give one of the "
                                       "two", "--set")
            if key == "algorithms" and value is None:
                data["algorithms"] = {}
            elif key in removed:
                data.get("algorithms", {}).pop(parts[1], None)
            else:
                set_dotted(data, key, value)
        return recipe_from_dict(data, source="--set")

    def override_warnings(self, overrides: dict[str, Any]) -> list[str]:
        """What in ``overrides`` would change nothing of this recipe, one line each: a method removed
        (``algorithms.NAME=null``) that it does not have."""
        return [f"--set {key}=null: the recipe has no {key[len('algorithms.'):]}, nothing to remove (to switch it on "
                f"with its defaults: --set {key}={{}})"
                for key in _removed_methods(overrides) if dotted_parts(key)[1] not in self.algorithms]


def _removed_methods(overrides: dict[str, Any]) -> list[str]:
    """The keys ``algorithms.NAME`` (an import path counts as one name) set to None, after checking that each
    names a method (an unknown one is refused as in a recipe)."""
    from recipesearch.algorithms import get_algorithm

    keys = []
    for key, value in overrides.items():
        parts = dotted_parts(key)
        if value is None and len(parts) == 2 and parts[0] == "algorithms":
            try:
                get_algorithm(parts[1])
            except ConfigError as exc:
                raise ConfigError(exc.field, exc.message, "--set") from None
            keys.append(key)
    return keys


def dotted_parts(key: str) -> list[str]:
    """``key`` split at its dots, except inside an import path: ``algorithms.acme.tricks:Noise.std`` is
    ``["algorithms", "acme.tricks:Noise", "std"]`` (the path's module dots are not nesting)."""
    parts = key.split(".")
    colon = next((i for i, p in enumerate(parts) if SEP in p), None)
    if colon is None or colon < 1:
        return parts
    return [parts[0], ".".join(parts[1:colon + 1]), *parts[colon + 1:]]


def set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    parts = dotted_parts(key)
    node = data
    for part in parts[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ConfigError(key, f"'{part}' is not a mapping")
        node = child
    node[parts[-1]] = value


def _pydantic_error(exc: ValidationError, source: str | None, lines: LineMap | None) -> ConfigError:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"])
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    if err["type"] == "extra_forbidden":
        msg = "unknown field"
    elif err["type"] == "literal_error":
        msg = msg.replace("Input should be", "allowed:")
    line = lines.line_of(field) if lines else None
    return ConfigError(field, msg, source, line)


def recipe_from_dict(data: Any, source: str | None = None, lines: LineMap | None = None) -> Recipe:
    """Validate a mapping into a Recipe, checking algorithms, model and interactions too."""
    if not isinstance(data, dict):
        raise ConfigError("", "a recipe must be a YAML mapping", source)
    try:
        recipe = Recipe.model_validate(data)
    except ValidationError as exc:
        raise _pydantic_error(exc, source, lines) from None
    try:
        check_recipe(recipe)
    except ConfigError as exc:
        if exc.source is None:
            raise ConfigError(exc.field, exc.message, source, lines.line_of(exc.field) if lines else None) from None
        raise
    return recipe


def check_recipe(recipe: Recipe) -> None:
    """Checks that need the registries: algorithm names and hparams, forbidden pairs, model kwargs."""
    import torch

    from recipesearch.algorithms import build_algorithms
    from recipesearch.models import create_model

    if recipe.max_duration * recipe.budget > MAX_EPOCHS:
        raise ConfigError("budget", f"max_duration x budget = {recipe.max_duration * recipe.budget:g} epochs: more "
                                    f"than the {MAX_EPOCHS} a recipe may train")
    if recipe.schedule.warmup_epochs > recipe.max_duration:
        raise ConfigError("schedule.warmup_epochs", f"{recipe.schedule.warmup_epochs:g} epochs of warmup in a "
                                                    f"{recipe.max_duration:g}-epoch run (max_duration)")
    build_algorithms(recipe.algorithms, recipe=recipe)  # validates names, hparams, interactions
    if is_import_path(recipe.data.name):
        from recipesearch.data.user import check_loader_options

        check_loader_options(recipe.data)
    for key in ("num_classes", "in_channels", "image_size"):
        if key in recipe.model.kwargs:
            raise ConfigError(f"model.{key}", "is set from the data, not the recipe's model section"
                                              + ("; use data.image_size" if key == "image_size" else ""))
    # Building on the meta device checks the name and every option without allocating weights.
    with torch.device("meta"):
        create_model(recipe.model.name, num_classes=10, in_channels=3, image_size=32, **recipe.model.kwargs)


def load_recipe(path: str | Path) -> Recipe:
    from recipesearch import shipped

    path = shipped.resolve(path, "recipe")  # a bare name: the shipped recipe (recipesearch recipes)
    data, lines = read_yaml(path)
    add_search_dir(Path(path).parent)  # user code named by import path may sit beside the file
    return recipe_from_dict(data, str(path), lines)


def loads_recipe(text: str, source: str = "<string>") -> Recipe:
    data, lines = parse_yaml(text, source)
    return recipe_from_dict(data, source, lines)


def dump_recipe(recipe: Recipe, header: str | None = None) -> str:
    """YAML text of a recipe; ``header`` lines become ``#`` comments (provenance of exported recipes)."""
    body = yaml.safe_dump(recipe.to_dict(), sort_keys=False, default_flow_style=None)
    if not header:
        return body
    comments = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return comments + body


def recipe_id(recipe: Recipe) -> str:
    """Stable 12-hex-digit id: sha256 of the canonical JSON (sorted keys) without the display name, nor the
    data fields that only decide how the images are held (``data.in_memory``, ``cache``, ``workers``)."""
    content = recipe.to_dict()
    content.pop("name", None)
    for key in RUNTIME_FIELDS:
        content.get("data", {}).pop(key, None)
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]
