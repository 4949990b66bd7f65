"""The hook contract between the training loops and the algorithms: the events fired (``Event``) and the
state hooks read and change (``State``).

It sits below both sides: ``recipesearch.algorithms`` implements hooks against it, and the trainers that fire
them (``recipesearch.train.loop``, ``recipesearch.own_loop``) import the algorithms; this package imports
neither, so no import of one side can cycle through the other.
"""
from __future__ import annotations

from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State

__all__ = ["Event", "State"]
