"""The analysis's numbers as text, written one way by every reader (CLI, live table, report, recipe files).

Kept apart from the frontier's computation because renderers that never compute a frontier (the HTML
page, the plots, the live progress lines) need the same "is this a number" test and interval wording.
"""
from __future__ import annotations

import math
from typing import Any


def finite(x: Any) -> bool:
    """A number that is neither NaN nor infinite (None, text and the like are not)."""
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def interval_text(low: Any, high: Any, *, dash: str = "-", label: bool = True, spec: str = ".2f") -> str:
    """' [95% CI 1.90-2.09]' (' [1.90-2.09]' without the label) after a speedup; '' without a finite interval.

    ``dash``: "–" for the HTML report and plots; the default ASCII hyphen where the text may be read back
    with any encoding (recipe files) or printed on any terminal."""
    if not (finite(low) and finite(high)):
        return ""
    return f" [{'95% CI ' if label else ''}{format(float(low), spec)}{dash}{format(float(high), spec)}]"
