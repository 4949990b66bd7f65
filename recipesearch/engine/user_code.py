"""A search's user code checked before anything trains: every import path the space can reach resolves, a
user dataset loads with sound images and labels, a user method keeps the Algorithm contract; then what to
ship to the trials (``engine/shipping.py``) and what to record (run.json ``user_code``).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import yaml

from recipesearch import plugins
from recipesearch.engine.shipping import Shipment, collect
from recipesearch.errors import ConfigError

if TYPE_CHECKING:
    from recipesearch.space import SearchSpace


def _strings(node: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(dotted path, string) for every mapping key and string value in ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            child = f"{path}.{key}" if path else str(key)
            if isinstance(key, str):
                yield child, key
            yield from _strings(value, child)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _strings(value, f"{path}[{i}]")
    elif isinstance(node, str):
        yield path, node


def space_import_paths(space: SearchSpace) -> dict[str, str]:
    """{import path: the field that names it} over the space file and its base recipe: a model choice of
    ``hparams`` is as much the user's code as the base recipe's model."""
    found: dict[str, str] = {}
    documents = [space.base.to_dict()]
    try:
        documents.append(yaml.safe_load(space.text) if space.text else {})
    except yaml.YAMLError:
        pass
    for doc in documents:
        for field, text in _strings(doc):
            if plugins.looks_like_import_path(text):
                found.setdefault(text, field)
    return found


def preflight(space: SearchSpace) -> Shipment:
    """Resolve, check and collect the space's user code; any problem is one ``ConfigError`` line."""
    paths = space_import_paths(space)
    for path, field in paths.items():
        plugins.resolve(path, field)
    data = space.base.data
    if plugins.is_import_path(data.name):
        from recipesearch.data.user import check_dataset

        check_dataset(data)
    for key in _user_algorithms(space):
        from recipesearch.algorithms.contract import run_contract

        problems = run_contract(key)
        if problems:
            raise ConfigError(f"algorithms.{key}", f"breaks the Algorithm contract: {problems[0]}")
    return collect(list(dict.fromkeys(path.partition(plugins.SEP)[0] for path in paths)))


def _user_algorithms(space: SearchSpace) -> list[str]:
    from recipesearch.algorithms.registry import get_algorithm

    names = list(dict.fromkeys([*space.base.algorithms, *space.algorithms]))
    return [n for n in names if plugins.is_import_path(n) or plugins.is_user_object(get_algorithm(n))]


def changed_since(meta: dict[str, Any]) -> str | None:
    """A warning naming the user modules whose source changed since run.json recorded them."""
    return plugins.changed_warning(meta.get("user_code"), "this search recorded them (run.json)")
