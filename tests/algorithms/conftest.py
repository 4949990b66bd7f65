"""Fixtures of the algorithm tests: counting the Python work of a call (vectorised code does the same for any
batch size; a loop over the images grows with it)."""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest


def count_python_calls(fn: Callable[[], Any]) -> int:
    """Function calls (Python and C) made while ``fn()`` runs: a count of steps, the same on a loaded machine."""
    calls = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(previous)
    return calls


@pytest.fixture
def python_calls():
    """``python_calls(fn) -> int``: the calls ``fn()`` makes (``count_python_calls``)."""
    return count_python_calls
