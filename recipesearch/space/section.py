"""The base of every mapping in a space file: unknown, missing and mistyped keys are one-line errors."""
from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator

from recipesearch.space.messages import field_error, show


class Section(BaseModel):
    """A mapping of the space file, validated strictly: ``1.0`` is not an integer, ``true`` not a number,
    and numbers must be finite (YAML has ``.nan``)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)
    not_a_mapping: ClassVar[str] = "must be a mapping"
    unknown_hint: ClassVar[str] = ""  # " for a scale parameter": said after "unknown field"

    @model_validator(mode="before")
    @classmethod
    def _keys(cls, data: Any) -> Any:
        # Checked before the values so a misspelt key is reported as such, not as a missing one.
        data = cls.coerce(data)
        if not isinstance(data, dict):
            raise field_error(f"{cls.not_a_mapping}, got {show(data)}")
        allowed = cls.allowed_keys(data)
        for key in data:
            if key not in allowed:
                known = ", ".join(allowed) or "none"
                raise field_error(f"unknown field{cls.unknown_hint} (allowed: {known})", at=str(key))
        for name, info in cls.model_fields.items():
            key = info.alias or name
            if info.is_required() and key not in data:
                raise field_error(f"missing: {info.description}", at=key)
        return data

    @classmethod
    def coerce(cls, data: Any) -> Any:
        """Shorthands accepted in place of the mapping (``sampler: tpe``); the data as is by default."""
        return data

    @classmethod
    def allowed_keys(cls, data: dict[Any, Any]) -> tuple[str, ...]:
        """The keys the mapping may have, in the order the error lists them: the fields by default."""
        return tuple(info.alias or name for name, info in cls.model_fields.items())
