"""Dataset registry: ``@register_dataset(name)`` stores a loader, ``get_dataset(name)`` returns it.

The registry follows timm's ``register_model`` / ``create_model`` pattern (huggingface/pytorch-image-models,
``timm/models/_registry.py``). A loader is a function ``loader(spec: DataSpec) -> RawDataset`` that decodes
a dataset from disk into uint8 CPU tensors once (``data/raw.py``); ``recipesearch.data.bundle.load_data`` then resizes,
splits, caches and moves the tensors to the device.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from recipesearch.data.raw import RawDataset
from recipesearch.errors import UserError
from recipesearch.plugins import is_import_path

ENV_DATA = "RECIPESEARCH_DATA"  # a folder holding one sub-folder per dataset name


Loader = Callable[..., RawDataset]  # loader(spec: DataSpec)
_REGISTRY: dict[str, Loader] = {}


def register_dataset(name: str) -> Callable[[Loader], Loader]:
    """Decorator: register ``loader(spec) -> RawDataset`` under ``name`` (a DataSpec ``name`` value)."""

    def decorator(loader: Loader) -> Loader:
        if name in _REGISTRY and _REGISTRY[name] is not loader:
            raise ValueError(f"dataset {name!r} is already registered")
        if is_import_path(name):
            raise ValueError(f"dataset name {name!r}: ':' marks an import path; choose a plain name")
        _REGISTRY[name] = loader
        return loader

    return decorator


Lister = Callable[..., Any]  # lister(spec: DataSpec)
_STREAMING: dict[str, Lister] = {}


def register_streaming(name: str) -> Callable[[Lister], Lister]:
    """Decorator: ``lister(spec)`` lists dataset ``name`` without decoding it, returning an object with
    ``count``, ``size``, ``decoded_bytes`` and ``open(cache, workers) -> RawDataset`` whose splits are image
    sources: the datasets that can stream (``data.in_memory``)."""

    def decorator(lister: Lister) -> Lister:
        _STREAMING[name] = lister
        return lister

    return decorator


def get_streaming(name: str) -> Lister | None:
    """The lister of a dataset that can stream, else None (it is decoded whole by its loader). A user's
    dataset named by import path always has one (``data/user.py``)."""
    if is_import_path(name):
        from recipesearch.data.user import user_listing

        return user_listing
    return _STREAMING.get(name)


def registered_loaders() -> dict[str, Loader]:
    """Every registered loader by name (a copy)."""
    return dict(_REGISTRY)


def install_dataset(name: str, loader: Loader) -> None:
    """Register a loader received from the driver (``engine/shipping.py``); a name already here is kept."""
    _REGISTRY.setdefault(name, loader)


def list_datasets() -> list[str]:
    """Names of all registered datasets, sorted."""
    return sorted(_REGISTRY)


def get_dataset(name: str) -> Loader:
    """The loader registered under ``name``; a one-line ``UserError`` listing the names otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UserError(f"unknown dataset {name!r}; registered datasets: {', '.join(list_datasets())}") from None


# ---- helpers shared by the loaders -------------------------------------------------------------------


class SpecLocation(Protocol):
    """What the helpers below read of a ``DataSpec`` (data/spec.py): that module validates names against this
    registry, so this one names only the two fields it needs rather than importing it back."""

    name: str
    root: str | None



def default_root(name: str) -> Path:
    """Where a dataset lives when ``DataSpec.root`` is unset: ``$RECIPESEARCH_DATA/<name>`` or the cache."""
    base = os.environ.get(ENV_DATA)
    return Path(base).expanduser() / name if base else Path.home() / ".cache" / "recipesearch" / name


def spec_root(spec: SpecLocation) -> Path:
    """``spec.root`` with ``~`` expanded, or ``default_root(spec.name)``."""
    return Path(spec.root).expanduser() if spec.root else default_root(spec.name)


def candidate_dirs(spec: SpecLocation, extra: Sequence[Path] = (), subdirs: Sequence[str] = ()) -> list[Path]:
    """Folders to search, in order, without duplicates: root, ``$RECIPESEARCH_DATA/<name>``, ``extra``;
    each followed by its ``subdirs`` (the layouts torchvision and the original archives use).

    A ``data.root`` given in the recipe is the only place looked: a typo there must be an error, not a
    silent fall-back to another copy of the data."""
    bases = [spec_root(spec)]
    if not spec.root:
        if os.environ.get(ENV_DATA):
            bases.append(Path(os.environ[ENV_DATA]).expanduser() / spec.name)
        bases.extend(extra)
    out: list[Path] = []
    for base in bases:
        for d in (base, *(base / s for s in subdirs)):
            if d not in out:
                out.append(d)
    return out
