"""``DataSpec``: the ``data:`` section of a recipe — which dataset, where, at what size, which split.

Validation messages are one clause each (pydantic v2 field validators raising ``ValueError``); the recipe
layer turns them into ``file:line: data.<field>: <message>``.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator

from recipesearch.data.registry import list_datasets


class DataSpec(BaseModel):
    """What to load; every field is part of the ``load_data`` cache key."""

    model_config = ConfigDict(extra="forbid")

    name: str  # a registered dataset: digits, fashion_mnist, cifar10, imagefolder
    root: str | None = None  # folder with the files; None = $RECIPESEARCH_DATA/<name> or ~/.cache/recipesearch/<name>
    image_size: int | None = None  # resize once at decode time; None = the dataset's default size
    val_fraction: float = 0.0  # held out of train (stratified) for validation; search on it, not on test
    subset: float = 1.0  # fraction of (remaining) train kept, stratified: fast, noisier searches
    split_seed: int = 0  # seeds the validation split and the subset, not training
    augment: bool = True  # random crop with padding + horizontal flip (where the dataset allows it)
    download: bool = False  # allow torchvision to download a missing dataset

    @field_validator("name")
    @classmethod
    def _known_name(cls, value: str) -> str:
        names = list_datasets()
        if value not in names:
            raise ValueError(f"unknown dataset {value!r}; choose one of: {', '.join(names)}")
        return value

    @field_validator("root")
    @classmethod
    def _nonempty_root(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must be a folder path or null, not an empty string")
        return value

    @field_validator("image_size")
    @classmethod
    def _image_size_range(cls, value: int | None) -> int | None:
        if value is not None and not 4 <= value <= 1024:
            raise ValueError(f"must be between 4 and 1024 pixels (or null for the dataset default), got {value}")
        return value

    @field_validator("val_fraction")
    @classmethod
    def _val_fraction_range(cls, value: float) -> float:
        if not 0.0 <= value < 0.9:
            raise ValueError(f"must be >= 0 and < 0.9, got {value}")
        return value

    @field_validator("subset")
    @classmethod
    def _subset_range(cls, value: float) -> float:
        if not 0.0 < value <= 1.0:
            raise ValueError(f"must be > 0 and <= 1, got {value}")
        return value
