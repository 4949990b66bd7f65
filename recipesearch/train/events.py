"""The old home of ``Event``, kept because user algorithms written from earlier examples import it from here.

The hook contract lives in ``recipesearch.hooks`` (below both the algorithms and the trainer); import it from
there.
"""
from __future__ import annotations

from recipesearch.hooks.events import Event

__all__ = ["Event"]
