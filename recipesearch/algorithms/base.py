"""The algorithm contract: a hook class that runs a pure function at named events.

Subclasses declare ``name``, ``description``, ``citation``, ``events`` (when ``apply`` runs), ``order``
(lower runs first at the same event) and a pydantic ``Params`` model whose defaults are the literature's.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Algorithm(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    citation: ClassVar[str]
    events: ClassVar[frozenset[Event]] = frozenset()
    order: ClassVar[int] = 50
    Params: ClassVar[type[BaseModel]] = NoParams

    def __init__(self, **params: Any):
        try:
            self.params = self.Params(**params)
        except ValidationError as exc:
            err = exc.errors()[0]
            key = ".".join(str(p) for p in err["loc"])
            msg = "unknown hyperparameter" if err["type"] == "extra_forbidden" else err["msg"]
            msg = msg.removeprefix("Value error, ")
            allowed = ", ".join(self.Params.model_fields) or "none"
            field = f"algorithms.{self.name}" + (f".{key}" if key else "")  # a whole-model check has no key
            raise ConfigError(field, f"{msg} (hyperparameters: {allowed})") from None

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        return cls.Params().model_dump()

    def match(self, event: Event, state: State) -> bool:
        return event in self.events

    @abstractmethod
    def apply(self, event: Event, state: State) -> None:
        """Do the algorithm's work at ``event``; called only when ``match`` is true."""

    def __repr__(self) -> str:
        return f"{self.name}({self.params.model_dump()})"
