"""``DataSpec``: the ``data:`` section of a recipe — which dataset, where, at what size, which split.

Validation messages are one clause each (pydantic v2 field validators raising ``ValueError``); the recipe
layer turns them into ``file:line: data.<field>: <message>``.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator, model_validator

from recipesearch.data.registry import list_datasets
from recipesearch.errors import ConfigError
from recipesearch.plugins import is_import_path

CHANNELS_DATASETS = ("imagefolder",)  # datasets that convert their images to ``channels``
STREAMING_DATASETS = ("imagefolder",)  # datasets that can be read by rows while training (data.in_memory)
# Fields that decide how the data is held, never what it is: left out of Recipe.id (recipesearch/recipe.py).
RUNTIME_FIELDS = ("in_memory", "cache", "workers")


class DataSpec(BaseModel):
    """What to load; every field is part of the ``load_data`` cache key.

    ``hflip``, ``crop_padding`` and ``channels`` default to ``None``, "the dataset's own choice", which a
    recipe's dump leaves out (``exclude_none``): recipes that do not set them keep their ids.
    """

    model_config = ConfigDict(extra="forbid")

    name: str  # a registered dataset (digits, fashion_mnist, cifar10, imagefolder) or module:loader (data/user.py)
    # A user's loader (name module:loader) only: its keyword options. Written beside name in a recipe
    # (data: {name: "acme.data:load", root: ~/x}) or as options: {...}; None for the registered datasets.
    options: dict[str, Any] | None = None
    root: str | None = None  # folder with the files; None = $RECIPESEARCH_DATA/<name> or ~/.cache/recipesearch/<name>
    image_size: int | None = None  # resize once at decode time; None = the dataset's default size
    val_fraction: float = 0.0  # held out of train (stratified) for validation; search on it, not on test
    subset: float = 1.0  # fraction of (remaining) train kept, stratified: fast, noisier searches
    split_seed: int = 0  # seeds the validation split and the subset, not training
    augment: bool = True  # random crop (crop_padding) + horizontal flip (hflip) of each training batch
    # With augment: mirror half the images? None = the dataset's default (false for digits, true elsewhere).
    # false also tells flip_tta that a mirror may change the class.
    hflip: bool | None = None
    # With augment: random-crop padding in pixels at the trained image size; 0 = no crop. None = the
    # dataset's default (cifar10 4 at 32 px; fashion_mnist 2 at 28 px; digits 2 at 16 px; imagefolder
    # image_size // 8, at least 1), scaled with data.image_size.
    crop_padding: int | None = None
    channels: int | None = None  # imagefolder only: 1 = grayscale ("L"), 3 = RGB; None = 3
    download: bool = False  # allow torchvision to download a missing dataset
    # Decoded images in memory (on the training device), or streamed from disk by DataLoader workers?
    # auto (None) streams when they would take more than half of the host's (or the GPU's) memory; true
    # refuses such a size; false always streams (imagefolder only). Same batches either way.
    in_memory: bool | Literal["auto"] | None = None
    # imagefolder: keep the decoded images on disk under $RECIPESEARCH_CACHE (decoded once per machine);
    # None = true. false decodes on every load and, when streaming, decodes every batch again.
    cache: bool | None = None
    # DataLoader workers that read (decode) streamed batches; None = min(4, the trial's threads).
    workers: int | None = None

    @model_validator(mode="before")
    @classmethod
    def _user_options(cls, data: Any) -> Any:
        # A user's loader takes its options beside ``name``, as a model takes its options: they move into
        # ``options`` (a key that is a field of ours stays ours). Registered datasets keep unknown keys
        # refused as "unknown field".
        if isinstance(data, dict) and is_import_path(data.get("name")):
            extra = {k: v for k, v in data.items() if k not in cls.model_fields}
            if extra:
                data = {k: v for k, v in data.items() if k not in extra}
                data["options"] = {**(data.get("options") or {}), **extra}
        return data

    @field_validator("name")
    @classmethod
    def _known_name(cls, value: str) -> str:
        if is_import_path(value):
            from recipesearch.data.user import loader_function

            try:
                loader_function(value)
            except ConfigError as exc:
                raise ValueError(exc.message) from None
            return value
        names = list_datasets()
        if value not in names:
            raise ValueError(f"unknown dataset {value!r}; choose one of: {', '.join(names)}, or an import path "
                             "module:loader of your own")
        return value

    @field_validator("options")
    @classmethod
    def _options_for_user_loaders(cls, value: dict[str, Any] | None, info: ValidationInfo) -> dict[str, Any] | None:
        name = info.data.get("name")
        if value and name is not None and not is_import_path(name):
            raise ValueError(f"only a dataset named by import path (module:loader) takes options; {name} takes none")
        return value or None

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

    @field_validator("crop_padding")
    @classmethod
    def _crop_padding_range(cls, value: int | None) -> int | None:
        if value is not None and not 0 <= value <= 512:
            raise ValueError(f"must be between 0 and 512 pixels (0 = no crop, null = the dataset's), got {value}")
        return value

    @field_validator("in_memory", mode="before")
    @classmethod
    def _in_memory_streams(cls, value: object, info: ValidationInfo) -> object:
        if not (value is None or isinstance(value, bool) or value == "auto"):
            raise ValueError(f"must be auto, true or false, got {value!r}")
        name = info.data.get("name")
        if value is False and name is not None and name not in STREAMING_DATASETS and not is_import_path(name):
            raise ValueError(f"false streams {', '.join(STREAMING_DATASETS)} only; {name} is decoded whole into "
                             f"memory (use auto or true)")
        return value

    @field_validator("workers")
    @classmethod
    def _workers_range(cls, value: int | None) -> int | None:
        if value is not None and not 0 <= value <= 64:
            raise ValueError(f"must be between 0 and 64 (0 = read in the training process), got {value}")
        return value

    @field_validator("channels")
    @classmethod
    def _channels_choice(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is None:
            return value
        if value not in (1, 3):
            raise ValueError(f"must be 1 (grayscale) or 3 (RGB), got {value}")
        name = info.data.get("name")
        if name is not None and name not in CHANNELS_DATASETS:
            raise ValueError(f"only {', '.join(CHANNELS_DATASETS)} converts its images; {name} keeps its own "
                             f"channels (remove data.channels)")
        return value
