"""From a problem in a space file to one line: ``space.yaml:12: hparams.optimizer.lr.scale: min > max``.

Two sources of problems: pydantic's validation of the file's shape (``schema.py``), translated here into
the same short phrases the hand-written checks use, and the checks that need the base recipe and the
algorithm registry (``loading.py``), which call ``Located.error`` directly.
"""
from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails, PydanticCustomError

from recipesearch.errors import ConfigError
from recipesearch.yamlio import LineMap

SPACE_ERROR = "space_file"  # the pydantic error type of every message written in this package
# Tags of the tagged union of parameter entries: pydantic puts the tag in the error location
# (hparams.optimizer.lr.<scale>.scale.1); they are not fields of the file, so they are dropped.
ENTRY_TAGS = ("<scale>", "<grid>", "<range>", "<choices>", "<fixed>")


class Located:
    """Where errors point: the source file and the line of each dotted field."""

    def __init__(self, source: str, lines: LineMap | None):
        self.source, self.lines = source, lines

    def error(self, field: str, message: str) -> ConfigError:
        return ConfigError(field, message, self.source, self.lines.line_of(field) if self.lines else None)

    def from_pydantic(self, exc: ValidationError) -> ConfigError:
        """The first problem pydantic found, as one line."""
        err = exc.errors(include_url=False)[0]
        return self.error(_field_of(err), _message_of(err))


def field_error(message: str, at: str | int | None = None) -> PydanticCustomError:
    """An error for a validator to raise: ``message`` as written, located at the validated value, or at
    its key/index ``at`` (a model validator's errors are otherwise located at the whole mapping)."""
    return PydanticCustomError(SPACE_ERROR, message, {} if at is None else {"at": str(at)})


def show(value: Any) -> str:
    """A value as a message shows it: ``'x'``, ``3``, ``a list``, ``nothing``."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return "nothing" if value is None else repr(value)


def _field_of(err: ErrorDetails) -> str:
    parts = [str(p) for p in err["loc"] if p not in ENTRY_TAGS]
    at = (err.get("ctx") or {}).get("at")
    return ".".join([*parts, at] if at is not None else parts)


def _message_of(err: ErrorDetails) -> str:
    kind, got, ctx = err["type"], err.get("input"), err.get("ctx") or {}
    if kind == SPACE_ERROR:
        return err["msg"]
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"must be an integer, got {show(got)}"
    if kind in ("float_type", "float_parsing"):
        return f"must be a number, got {show(got)}"
    if kind == "finite_number":
        return f"must be a finite number, got {show(got)}"
    if kind in ("bool_type", "bool_parsing"):
        return f"must be true or false, got {show(got)}"
    if kind == "string_type":
        return f"must be text, got {show(got)}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"must be a mapping, got {show(got)}"
    if kind in ("list_type", "tuple_type"):
        return f"must be a list, got {show(got)}"
    bounds = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}
    if kind in bounds:
        limit = next(iter(ctx.values()))
        return f"must be {bounds[kind]} {limit:g}, got {got}"
    return err["msg"].removeprefix("Value error, ")  # pydantic's own words: still one line, names the field
