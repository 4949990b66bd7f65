"""The old home of ``State``, kept because user algorithms written from earlier examples import it from here.

The hook contract lives in ``recipesearch.hooks`` (below both the algorithms and the trainer); import it from
there.
"""
from __future__ import annotations

from recipesearch.hooks.state import State

__all__ = ["State"]
