"""Fixtures: a hand-made run directory (see fake_run.py), and the same with its report built once."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .fake_run import write_run_dir


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A fresh synthetic run directory (trials.csv, run.json, space.yaml), no report yet."""
    return write_run_dir(tmp_path / "run")


@pytest.fixture(scope="session")
def _built(tmp_path_factory) -> Path:
    from recipesearch.report import build_report

    path = write_run_dir(tmp_path_factory.mktemp("built") / "run")
    build_report(path)
    return path


@pytest.fixture
def built_run(_built: Path, tmp_path: Path) -> Path:
    """A copy of a run directory whose report was built (shared build, private copy per test)."""
    return Path(shutil.copytree(_built, tmp_path / "built"))
