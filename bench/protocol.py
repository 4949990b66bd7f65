"""What a benchmark module is: the one contract ``bench.run_all`` runs and renders every benchmark through.

A benchmark is a module ``bench/<NAME>.py`` (or a package ``bench/<NAME>/``) listed in
``bench.run_all.BENCHMARKS``, with at module level:

- ``NAME``: its key; the file name of its raw results, ``reports/bench/<NAME>.json``.
- ``TITLE``: the heading of its section of ``reports/benchmarks.md``.
- ``run(quick: bool = False, ...) -> dict``: measure and return the raw results (JSON-serialisable, with
  ``environment`` and ``finished``); ``quick`` selects the documented short version. Further keyword
  arguments are for its own command line only: ``run_all`` passes ``quick`` alone.
- ``render(result: dict) -> str``: its section's Markdown from the saved results alone (no measuring), so
  ``python -m bench.run_all --render`` rebuilds the document from ``reports/bench/*.json``.
- ``main(argv=None)``: its own command line, ``python -m bench.<NAME> [--quick] ...``.
- ``NEEDS_CUDA`` (optional, default False): True when it can only run on a CUDA device; elsewhere
  ``run_all`` skips it and keeps its previous results.
"""
from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Benchmark(Protocol):
    """The attributes every benchmark module has (see the module docstring); a module object satisfies it."""

    NAME: str
    TITLE: str

    def run(self, quick: bool = False) -> dict[str, Any]: ...

    def render(self, result: dict[str, Any]) -> str: ...

    def main(self, argv: list[str] | None = None) -> Any: ...


def needs_cuda(module: ModuleType) -> bool:
    """Whether the benchmark only runs on a CUDA device (``NEEDS_CUDA``; absent means no)."""
    return bool(getattr(module, "NEEDS_CUDA", False))


def check_benchmark(module: ModuleType, name: str) -> list[str]:
    """What ``module`` lacks of the protocol, as sentences (empty when it follows it)."""
    problems = []
    for attr in ("NAME", "TITLE"):
        if not isinstance(getattr(module, attr, None), str):
            problems.append(f"bench.{name} has no string {attr}")
    if getattr(module, "NAME", name) != name:
        problems.append(f"bench.{name}.NAME is {module.NAME!r}, not its module name {name!r}")
    for attr in ("run", "render", "main"):
        if not callable(getattr(module, attr, None)):
            problems.append(f"bench.{name} has no function {attr}")
    run = getattr(module, "run", None)
    if callable(run) and "quick" not in inspect.signature(run).parameters:
        problems.append(f"bench.{name}.run takes no quick argument")
    return problems
