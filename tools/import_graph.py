"""The package's import graph read from its source: modules, the imports between them, the cycles.

Nodes are modules (a package is its ``__init__``); an edge A -> B means A imports B anywhere: at module level,
inside a function, or under ``if TYPE_CHECKING:``. A lazy import does not fail at import time, but it is still a
dependency. Importing ``a.b.c`` also runs the packages ``a`` and ``a.b``, so those are edges too, except to the
importer's own ancestors, which Python has already started by the time the importer runs. Lazy imports of
third-party libraries are not edges (only recipesearch's modules are nodes).

Read by ``tests/test_import_graph.py`` (no cycles) and ``tools/architecture.py`` (docs/ARCHITECTURE.md's graph).
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import recipesearch

PACKAGE_DIR = Path(recipesearch.__file__).parent
ROOT = "recipesearch"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules() -> dict[str, Path]:
    """Every module of the package by dotted name (``recipesearch.engine`` for its ``__init__.py``), and its file."""
    return {_module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def import_statements(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of a module: at module level, in functions and classes, under TYPE_CHECKING."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _imported_modules(module: str, is_package: bool, stmt: ast.Import | ast.ImportFrom,
                      known: set[str]) -> set[str]:
    if isinstance(stmt, ast.Import):
        return {m for alias in stmt.names for m in _with_parents(alias.name)}
    if stmt.level:  # relative: resolve against the importing module's package
        base = module.split(".")
        base = base if is_package else base[:-1]
        base = base[: len(base) - (stmt.level - 1)]
        target = ".".join(base + ([stmt.module] if stmt.module else []))
    else:
        target = stmt.module or ""
    found = set(_with_parents(target))
    # ``from pkg import name`` imports the submodule pkg.name when there is one.
    found |= {f"{target}.{alias.name}" for alias in stmt.names if f"{target}.{alias.name}" in known}
    return found


def dynamic_imports() -> dict[str, set[str]]:
    """Imports ast cannot see: recipesearch.algorithms imports every algorithm module via importlib."""
    from recipesearch.algorithms import get_algorithm, list_algorithms

    return {"recipesearch.algorithms": {get_algorithm(n).__module__ for n in list_algorithms()}}


def import_graph() -> dict[str, set[str]]:
    modules = package_modules()
    known = set(modules)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"
        own_ancestors = set(_with_parents(module)[:-1]) | ({module} if is_package else set())
        for stmt in import_statements(tree):
            for target in _imported_modules(module, is_package, stmt, known):
                # ``from pkg import name`` needs pkg's body when a name is an attribute of it, not a submodule
                implicit_parent = isinstance(stmt, ast.ImportFrom) and target == stmt.module and any(
                    f"{target}.{alias.name}" not in known for alias in stmt.names)
                if target in known and target != module and not (target in own_ancestors and not implicit_parent):
                    graph[module].add(target)
    for module, targets in dynamic_imports().items():
        graph[module] |= targets
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles
