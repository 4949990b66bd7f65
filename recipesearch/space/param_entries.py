"""One parameter as written in a space file (``{scale: [0.5, 2]}``, ``{choices: [1, 2]}``, a bare value),
and how it becomes a ``ParamSpec`` once the base recipe says what it multiplies or replaces.

The shape is checked here by pydantic; what needs the base recipe (the reference value, whether every
sampled value is a valid recipe) is checked in ``to_param`` against a ``Target``.
"""
from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BeforeValidator, Discriminator, Field, Tag, model_validator

from recipesearch.errors import ConfigError
from recipesearch.space.messages import Located, field_error, show
from recipesearch.space.params import ChoicesParam, GridParam, ParamSpec, RangeParam, ScaleParam, round_half_up
from recipesearch.space.section import Section

KINDS = ("scale", "grid", "range", "choices")
SCALAR_TYPES = (bool, int, float, str)  # what a fixed value or a choice may be (or null)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Target:
    """What a parameter entry sets: everything ``to_param`` needs beyond the entry itself."""

    name: str  # key in the params dict: "optimizer.lr", "mixup.alpha"
    field: str  # where the file declares it: "hparams.optimizer.lr"
    ref: Any  # the base recipe's value (or the algorithm's default): what a multiplier multiplies
    is_int: bool  # the field holds an int: products are rounded, ranges default to integers
    needs_baseline: bool  # the baseline trials ask it, so its base value must be representable
    check: Callable[[Any], None]  # raises ConfigError for a value the recipe refuses
    where: Located

    def validate(self, value: Any, what: str) -> None:
        try:
            self.check(value)
        except ConfigError as exc:
            raise self.where.error(self.field, f"{what} gives {value!r}, which is invalid: {exc.message}") from None

    def error(self, key: str, message: str) -> ConfigError:
        return self.where.error(f"{self.field}.{key}", message)


# -- values inside an entry ------------------------------------------------------------------------------
def _two_numbers(value: Any) -> Any:
    if not isinstance(value, list) or len(value) != 2:
        raise field_error(f"must be [min, max], got {show(value)}")
    return value


def _ordered(bounds: list[float]) -> list[float]:
    lo, hi = bounds
    if lo > hi:
        raise field_error(f"min > max ({lo:g} > {hi:g})")
    if lo == hi:
        raise field_error(f"empty range ({lo:g} to {hi:g}); give a bare value to fix it")
    return bounds


def _non_empty_list(value: Any) -> Any:
    if not isinstance(value, list) or not value:
        raise field_error(f"must be a non-empty list, got {show(value)}")
    return value


def _distinct(values: list[Any]) -> list[Any]:
    # Same type and equal: 1 and 1.0 are different choices (Optuna keeps them apart too).
    for i, value in enumerate(values):
        if any(type(value) is type(other) and value == other for other in values[:i]):
            raise field_error(f"{value!r} is listed twice", at=i)
    return values


def _scalar_choice(value: Any) -> Any:
    if not (value is None or isinstance(value, SCALAR_TYPES)):
        raise field_error(f"choices must be numbers, text, booleans or null, got {show(value)}")
    return value


Bounds = Annotated[list[float], BeforeValidator(_two_numbers), AfterValidator(_ordered)]
Multipliers = Annotated[list[Annotated[float, Field(gt=0)]], BeforeValidator(_non_empty_list),
                        AfterValidator(_distinct)]
Choices = Annotated[list[Annotated[Any, AfterValidator(_scalar_choice)]], BeforeValidator(_non_empty_list),
                    AfterValidator(_distinct)]


# -- the four kinds --------------------------------------------------------------------------------------
class KindEntry(Section):
    """A parameter mapping with exactly one kind key."""

    kind: ClassVar[str]

    @abstractmethod
    def to_param(self, target: Target) -> ParamSpec:
        """The sampled parameter, with its baseline and start values (see the package docstring)."""

    def _numeric_ref(self, target: Target) -> None:
        if not is_number(target.ref) or target.ref == 0:
            raise target.error(self.kind, f"a relative {self.kind} needs a nonzero numeric base value, but it is "
                                          f"{target.ref!r}; use range or choices")


class ScaleEntry(KindEntry):
    """``{scale: [lo, hi], log: true}``: multipliers of the base value, continuous (log by default)."""

    kind: ClassVar[str] = "scale"
    unknown_hint: ClassVar[str] = " for a scale parameter"
    scale: Bounds
    log: bool = True

    @model_validator(mode="after")
    def _positive(self) -> ScaleEntry:
        lo = self.scale[0]
        if self.log and lo <= 0:
            raise field_error(f"a log scale needs min > 0, got {lo:g}", at="scale")
        if lo <= 0:
            raise field_error(f"multipliers must be > 0, got {lo:g}", at="scale")
        return self

    def to_param(self, target: Target) -> ParamSpec:
        self._numeric_ref(target)
        lo, hi = self.scale
        for m in (lo, hi):
            target.validate(round_half_up(target.ref * m) if target.is_int else target.ref * m, f"{m:g}x")
        start = min(max(1.0, lo), hi)
        baseline = 1.0 if target.needs_baseline else start
        return ScaleParam(target.name, target.field, lo, hi, self.log, target.is_int, (), target.ref, baseline, start)


class RangeEntry(KindEntry):
    """``{range: [lo, hi], log: false, int: auto}``: absolute values; ``int`` defaults to the field's type."""

    kind: ClassVar[str] = "range"
    unknown_hint: ClassVar[str] = " for a range parameter"
    range: Bounds
    log: bool = False
    integer: bool = Field(False, alias="int")  # not given: an int field gives an int range

    @model_validator(mode="after")
    def _positive_if_log(self) -> RangeEntry:
        if self.log and self.range[0] <= 0:
            raise field_error(f"a log scale needs min > 0, got {self.range[0]:g}", at="range")
        return self

    def to_param(self, target: Target) -> ParamSpec:
        lo, hi = self.range
        ref = target.ref
        is_int = self.integer if "integer" in self.model_fields_set else target.is_int
        if is_int and not (lo.is_integer() and hi.is_integer()):
            raise target.error("range", "an int range needs integer bounds")
        if target.needs_baseline and not is_number(ref):
            raise target.error("range", f"the base recipe's value is {ref!r}; the baseline trials need a number here")
        for bound in (lo, hi):
            target.validate(int(bound) if is_int else bound, "the bound")
        middle = math.sqrt(lo * hi) if self.log else (lo + hi) / 2
        start = min(max(ref, lo), hi) if is_number(ref) else middle
        start = int(round(start)) if is_int else float(start)
        baseline = ref if is_number(ref) and target.needs_baseline else start
        return RangeParam(target.name, target.field, lo, hi, self.log, is_int, (), ref, baseline, start)


class GridEntry(KindEntry):
    """``{grid: [...]}``: multipliers of the base value, categorical."""

    kind: ClassVar[str] = "grid"
    unknown_hint: ClassVar[str] = " for a grid parameter"
    grid: Multipliers

    def to_param(self, target: Target) -> ParamSpec:
        self._numeric_ref(target)
        ref = target.ref
        for m in self.grid:
            target.validate(round_half_up(ref * m) if target.is_int else ref * m, f"{m!r}")
        start = 1.0 if 1.0 in self.grid else min(self.grid, key=lambda m: abs(math.log(m)))
        baseline = 1.0 if target.needs_baseline else start
        return GridParam(target.name, target.field, None, None, False, target.is_int,
                         _with_baseline(self.grid, baseline), ref, baseline, start)


class ChoicesEntry(KindEntry):
    """``{choices: [...]}``: absolute values, categorical (numbers, text, booleans, null)."""

    kind: ClassVar[str] = "choices"
    unknown_hint: ClassVar[str] = " for a choices parameter"
    choices: Choices

    def to_param(self, target: Target) -> ParamSpec:
        ref = target.ref
        for c in self.choices:
            target.validate(c, f"{c!r}")
        start = ref if any(type(ref) is type(c) and ref == c for c in self.choices) else self.choices[0]
        scalar = ref is None or isinstance(ref, SCALAR_TYPES)
        baseline = ref if target.needs_baseline and scalar else start
        return ChoicesParam(target.name, target.field, None, None, False, False,
                            _with_baseline(self.choices, baseline), ref, baseline, start)


def _with_baseline(choices: list[Any], baseline: Any) -> tuple[Any, ...]:
    # Optuna refuses an enqueued categorical value outside the choices, and the baselines are enqueued.
    return tuple(choices) if baseline in choices else (*choices, baseline)


# -- one entry of hparams, or one hyperparameter of an algorithm ----------------------------------------
def _one_kind(value: Any) -> Any:
    if isinstance(value, list):
        raise field_error("a list is not a parameter; write {choices: [...]} or {grid: [...]}")
    if isinstance(value, dict):
        kinds = [k for k in KINDS if k in value]
        if len(kinds) != 1:
            problem = "needs one of" if not kinds else "takes only one of"
            raise field_error(f"{problem} scale, grid, range, choices (or a bare value to fix it)")
    elif not (value is None or isinstance(value, SCALAR_TYPES)):
        raise field_error(f"must be a parameter mapping or a fixed value, got {show(value)}")
    return value


def _entry_tag(value: Any) -> str:
    if isinstance(value, dict):
        return next(f"<{k}>" for k in KINDS if k in value)  # exactly one: _one_kind ran first
    return "<fixed>"


# A bare scalar (None included) fixes the value; it stays as written and the recipe validates it.
ParamEntry = Annotated[
    Annotated[ScaleEntry, Tag("<scale>")] | Annotated[RangeEntry, Tag("<range>")]
    | Annotated[GridEntry, Tag("<grid>")] | Annotated[ChoicesEntry, Tag("<choices>")]
    | Annotated[Any, Tag("<fixed>")],
    Discriminator(_entry_tag),
    BeforeValidator(_one_kind),
]
