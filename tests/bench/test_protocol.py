"""bench/protocol.py: every benchmark run_all lists follows the contract, and a module that does not is named."""
from __future__ import annotations

import types

import pytest

from bench import run_all
from bench.protocol import Benchmark, check_benchmark


@pytest.mark.parametrize("name", run_all.BENCHMARKS)
def test_every_listed_benchmark_follows_the_protocol(name):
    mod = run_all._module(name)
    assert check_benchmark(mod, name) == []
    assert isinstance(mod, Benchmark)


def test_a_module_missing_parts_is_told_what_it_lacks():
    mod = types.ModuleType("bench.broken")
    mod.NAME = "other"

    def run(seeds=1):
        return {}

    mod.run = run
    problems = check_benchmark(mod, "broken")
    assert "bench.broken has no string TITLE" in problems
    assert "bench.broken.NAME is 'other', not its module name 'broken'" in problems
    assert "bench.broken has no function render" in problems
    assert "bench.broken.run takes no quick argument" in problems
