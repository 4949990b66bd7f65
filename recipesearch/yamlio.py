"""YAML reading that remembers the line of every field, so errors can say ``file:line: field``.

Recipes, spaces and ``--set`` values are read with ``StrictLoader``: PyYAML's safe loader, minus what
turns a typo into a silently wrong run or a hang:
- a key given twice is an error (the safe loader keeps the last: ``lr: 5.0`` after ``lr: 0.1``);
- only true/false are booleans (YAML 1.1 also reads yes/no/on/off, so ``lr: yes`` became 1.0);
- aliases (``*name``) are refused: a few lines of nested aliases ("billion laughs") expand to billions
  of nodes, and recipes have no need for them;
- nesting deeper than Python's recursion allows is a one-line error, not a RecursionError.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from recipesearch.errors import ConfigError

BOOL_TAG = "tag:yaml.org,2002:bool"


class StrictLoader(yaml.SafeLoader):
    """See the module docstring."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, "YAML aliases (*name) are not allowed here: write the "
                                              "value out", event.start_mark)
        return super().compose_node(parent, index)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: the base class says so
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}: it is given twice",
                                                        key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != BOOL_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
StrictLoader.add_implicit_resolver(BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))



class LineMap(dict):
    """Maps a dotted field path (``optimizer.lr``, ``algorithms.mixup.alpha``) to its 1-based line."""

    def line_of(self, field: str) -> int | None:
        # Walk up the path: a missing ``a.b.c`` is reported at the line of ``a.b``.
        parts = field.split(".")
        while parts:
            line = self.get(".".join(parts))
            if line is not None:
                return line
            parts.pop()
        return None


def _walk(node: yaml.Node, prefix: str, lines: LineMap) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
            lines[key] = key_node.start_mark.line + 1
            _walk(value_node, key, lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            key = f"{prefix}.{i}" if prefix else str(i)
            lines[key] = item.start_mark.line + 1
            _walk(item, key, lines)


def parse_yaml(text: str, source: str = "<string>") -> tuple[Any, LineMap]:
    """Parse YAML text; return the data and the line of each field. Syntax errors are ConfigErrors."""
    loader = StrictLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
        lines = LineMap()
        if node is not None:
            _walk(node, "", lines)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError("", f"invalid YAML: {problem}", source, line) from None
    except RecursionError:
        raise ConfigError("", "invalid YAML: nested too deeply", source) from None
    finally:
        loader.dispose()
    return data, lines


def read_yaml(path: str | Path) -> tuple[Any, LineMap]:
    """Read a YAML file; a missing or unreadable file is a one-line ConfigError."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise ConfigError("", f"file not found: {p}") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise ConfigError("", f"cannot read {p}: {exc.__class__.__name__}") from None
    return parse_yaml(text, str(p))
