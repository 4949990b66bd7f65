"""Shared fixtures: a tiny digits recipe that trains in about a second on one CPU thread."""
from __future__ import annotations

from typing import Any

import pytest

from recipesearch.recipe import Recipe, recipe_from_dict


def make_recipe(algorithms: dict[str, dict[str, Any]] | None = None, **overrides: Any) -> Recipe:
    """A small digits recipe; keyword overrides replace top-level fields (nested dicts are merged)."""
    base: dict[str, Any] = {
        "model": {"name": "cnn", "width": 8},
        "data": {"name": "digits"},
        "optimizer": {"name": "sgd", "lr": 0.2, "momentum": 0.9, "weight_decay": 5e-4},
        "schedule": {"name": "cosine", "warmup_epochs": 0.2},
        "max_duration": 1,
        "batch_size": 32,
        "seed": 0,
        "threads": 1,
        "device": "cpu",
        "algorithms": algorithms or {},
    }
    for key, value in overrides.items():
        # A new model name means a new model: its options must not inherit the tiny CNN's width.
        if key == "model" and "name" in value:
            base[key] = value
        elif isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    if "schedule" not in overrides:  # a shorter run keeps its warmup within the run (longer is refused)
        base["schedule"]["warmup_epochs"] = min(base["schedule"]["warmup_epochs"], base["max_duration"])
    return recipe_from_dict(base)


def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` (20-100 s: Ray clusters, kill -9 cycles, process groups) run first, in their
    collection order, the rest after them. pytest-xdist hands tests out in this order, so the suite's short
    tests fill in around the long ones instead of one worker finishing a long test alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: order kept within each part


@pytest.fixture(autouse=True, scope="session")
def _decode_cache_in_tmp(tmp_path_factory):
    """imagefolder's decode cache (``$RECIPESEARCH_CACHE``) in a folder of this session, never the user's:
    set in the environment so Ray workers and CLI subprocesses started by the tests inherit it."""
    import os

    os.environ["RECIPESEARCH_CACHE"] = str(tmp_path_factory.mktemp("decoded"))


@pytest.fixture
def tiny_recipe():
    """Factory fixture: ``tiny_recipe({"mixup": {"alpha": 0.2}}, max_duration=2)``."""
    return make_recipe


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """``user_module(source, name=None) -> module name``: a module of a user's own in a folder on sys.path (as
    a module beside a space file is), under a name unique to the test; forgotten again afterwards."""
    import sys
    import textwrap

    folder = tmp_path / "usercode"
    folder.mkdir(exist_ok=True)
    monkeypatch.syspath_prepend(str(folder))
    names: list[str] = []

    def write(source: str, name: str | None = None) -> str:
        name = name or f"user_{tmp_path.name.replace('-', '_')}_{len(names)}"
        (folder / f"{name}.py").write_text(textwrap.dedent(source))
        names.append(name)
        return name

    yield write
    for name in names:
        sys.modules.pop(name, None)
