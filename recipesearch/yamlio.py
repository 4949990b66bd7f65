"""YAML reading that remembers the line of every field, so errors can say ``file:line: field``."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from recipesearch.errors import ConfigError


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
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError("", f"invalid YAML: {problem}", source, line) from None
    lines = LineMap()
    if node is not None:
        _walk(node, "", lines)
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
