"""Training: the event loop, schedules and optimizers."""
from __future__ import annotations

from recipesearch.train.events import Event
from recipesearch.train.state import State

__all__ = ["Event", "State", "Trainer", "TrainResult", "fit"]


def __getattr__(name: str):
    # The loop imports data/models/algorithms; import it lazily so algorithms can import Event/State.
    if name in ("Trainer", "TrainResult", "fit", "evaluate"):
        from recipesearch.train import loop

        return getattr(loop, name)
    raise AttributeError(name)
