"""Training: the event loop, schedules and optimizers.

This package re-exports only the hook contract (``Event``, ``State``). The loop imports the algorithms,
and the algorithms import the contract, so the loop is imported by its own name, never from here:
``from recipesearch.train.loop import Trainer, TrainResult, fit``.
"""
from __future__ import annotations

from recipesearch.train.events import Event
from recipesearch.train.state import State

__all__ = ["Event", "State"]
