"""The four kinds of sampled parameter: how each is asked of Optuna, mapped to a recipe value, and swept.

``scale``/``grid`` sample a MULTIPLIER of the reference value ``ref`` (relative kinds); ``range``/``choices``
sample the value itself (absolute kinds). The sweep ladder is the hand procedure's 0.5x-2x grid in
sqrt(2) steps, the way the published Mild/Medium/Hot recipes were tuned.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Literal

STEPS = (0.5, 0.71, 1.0, 1.41, 2.0)  # the sweep's 0.5x-2x ladder (sqrt(2) steps)


def round_half_up(x: float) -> int:
    """Rounding of int fields: 2.5 -> 3 (Python's ``round`` would give 2)."""
    return int(math.floor(x + 0.5))


@dataclass(frozen=True)
class ParamSpec(ABC):
    """One sampled parameter: its name in the params dict, how Optuna samples it, how it maps to a value.

    Every kind has every attribute (unused ones keep their default) so callers can read ``low``/``choices``
    without asking the kind first.
    """

    kind: ClassVar[Literal["scale", "grid", "range", "choices"]]
    relative: ClassVar[bool]  # samples a multiplier of ``ref`` rather than the value

    name: str  # key in the params dict: "optimizer.lr", "mixup.alpha"
    field: str  # where the space file declares it, for errors: "hparams.optimizer.lr"
    low: float | None = None  # scale, range
    high: float | None = None
    log: bool = False
    is_int: bool = False  # range: suggest_int; scale/grid: the product is rounded
    choices: tuple[Any, ...] = ()  # grid, choices: exactly what Optuna gets (baseline value included)
    ref: Any = None  # the base (or default) value a multiplier multiplies
    baseline: Any = None  # the parameter value that reproduces the base recipe
    start: Any = None  # an in-space value near the base one: used when an algorithm is switched on

    @property
    def hparam(self) -> str:
        """The last part of the name: the recipe field or algorithm hyperparameter it sets."""
        return self.name.rsplit(".", 1)[-1]

    @abstractmethod
    def suggest(self, trial: Any) -> Any:
        """Ask ``trial`` (an ``optuna.Trial`` or anything with its ``suggest_*``) for this parameter."""

    @abstractmethod
    def value(self, param: Any) -> Any:
        """The recipe value for a sampled parameter (multiplier × reference for relative kinds)."""

    @abstractmethod
    def ladder(self) -> list[Any]:
        """The values the sweep steps through, in step order."""

    def neighbours(self, value: Any, k: int) -> list[Any]:
        """The values ``k`` steps down and up from ``value`` on the ladder (those that exist); ``value``
        itself need not be on the ladder."""
        ladder = self.ladder()
        below = [x for x in ladder if x < value and not math.isclose(x, value)]
        above = [x for x in ladder if x > value and not math.isclose(x, value)]
        return ([below[-k]] if len(below) >= k else []) + ([above[k - 1]] if len(above) >= k else [])

    def canonical(self) -> dict[str, Any]:
        """Every attribute, for the space hash (the key set is part of the hash: keep it)."""
        return {"kind": self.kind, **asdict(self)}

    def _times_ref(self, multiplier: Any) -> Any:
        product = self.ref * float(multiplier)
        return round_half_up(product) if self.is_int else product

    def _absolute(self, param: Any) -> Any:
        # Optuna may hand back 3.0 for an int parameter enqueued as a float.
        return int(param) if self.is_int and isinstance(param, float) and param.is_integer() else param

    def _stepped(self, anchor: float) -> list[float]:
        assert self.low is not None and self.high is not None
        return sorted({min(max(anchor * m, self.low), self.high) for m in STEPS})


@dataclass(frozen=True)
class ScaleParam(ParamSpec):
    """``{scale: [lo, hi], log: true}``: a continuous multiplier of the base value."""

    kind: ClassVar[Literal["scale"]] = "scale"
    relative: ClassVar[bool] = True

    def suggest(self, trial: Any) -> Any:
        assert self.low is not None and self.high is not None
        return trial.suggest_float(self.name, self.low, self.high, log=self.log)

    def value(self, param: Any) -> Any:
        return self._times_ref(param)

    def ladder(self) -> list[Any]:
        """The multipliers 0.5x-2x clipped to the range."""
        return self._stepped(1.0)


@dataclass(frozen=True)
class RangeParam(ParamSpec):
    """``{range: [lo, hi], log: false, int: auto}``: the absolute value, continuous or integer."""

    kind: ClassVar[Literal["range"]] = "range"
    relative: ClassVar[bool] = False

    def suggest(self, trial: Any) -> Any:
        assert self.low is not None and self.high is not None
        if self.is_int:
            return trial.suggest_int(self.name, int(self.low), int(self.high), log=self.log)
        return trial.suggest_float(self.name, self.low, self.high, log=self.log)

    def value(self, param: Any) -> Any:
        return self._absolute(param)

    def ladder(self) -> list[Any]:
        """The starting value times 0.5x-2x, clipped to the range (ints rounded)."""
        values = self._stepped(float(self.start))
        return sorted({int(round(v)) for v in values}) if self.is_int else values


@dataclass(frozen=True)
class GridParam(ParamSpec):
    """``{grid: [...]}``: a categorical multiplier of the base value."""

    kind: ClassVar[Literal["grid"]] = "grid"
    relative: ClassVar[bool] = True

    def suggest(self, trial: Any) -> Any:
        return trial.suggest_categorical(self.name, list(self.choices))

    def value(self, param: Any) -> Any:
        return self._times_ref(param)

    def ladder(self) -> list[Any]:
        """The grid, sorted."""
        return sorted(self.choices)


@dataclass(frozen=True)
class ChoicesParam(ParamSpec):
    """``{choices: [...]}``: an absolute categorical value (numbers, text, booleans, null)."""

    kind: ClassVar[Literal["choices"]] = "choices"
    relative: ClassVar[bool] = False

    def suggest(self, trial: Any) -> Any:
        return trial.suggest_categorical(self.name, list(self.choices))

    def value(self, param: Any) -> Any:
        return self._absolute(param)

    def ladder(self) -> list[Any]:
        """The choices as listed (they need not be ordered, or numbers)."""
        return list(self.choices)

    def neighbours(self, value: Any, k: int) -> list[Any]:
        """Steps along the listed order; a value not listed (same type and equal) has none."""
        ladder = self.ladder()
        idx = next((i for i, c in enumerate(ladder) if type(c) is type(value) and c == value), None)
        if idx is None:
            return []
        return [ladder[i] for i in (idx - k, idx + k) if 0 <= i < len(ladder)]
