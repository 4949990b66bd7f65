"""The benchmarks' renderers save their figures into reports/bench: under test they go to a temporary folder, so a
test run leaves the checkout's committed figures as they are."""
from __future__ import annotations

import pytest

import bench.common


@pytest.fixture(autouse=True)
def _figures_in_tmp(monkeypatch, tmp_path):
    monkeypatch.setattr(bench.common, "BENCH_DIR", tmp_path / "bench")
