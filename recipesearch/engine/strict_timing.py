"""``--strict-timing``: a trial timed on a busy machine is run again instead of entering the frontier.

Its training process got far less CPU than the search's median (``analysis.load``): another process took
turns on its cores, and its ``train_seconds`` measure that, not the recipe. With ``--strict-timing`` such a
trial is recorded FAIL with the reason and queued again (the same params and seed, ``queueing.requeue``),
at most ``MAX_BUSY_RERUNS`` times per run: under a machine that stays busy the last measurement stands.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from optuna.trial import FrozenTrial, TrialState

from recipesearch.analysis.load import is_busy, reference_share

BUSY_RERUNS = "busy_reruns"  # user attr: times this run was run again for a busy machine (carried by requeue)
MAX_BUSY_RERUNS = 2


def rerun_reason(trials: Sequence[FrozenTrial], attrs: dict[str, Any], asked: dict[str, Any]) -> str | None:
    """Why to run this finished trial again (its result's ``attrs``, its ``asked`` user attrs), or None."""
    share = attrs.get("cpu_share")
    if share is None or int(asked.get(BUSY_RERUNS) or 0) >= MAX_BUSY_RERUNS:
        return None
    reference = reference_share([t.user_attrs.get("cpu_share") for t in trials if t.state == TrialState.COMPLETE])
    if not is_busy(float(share), reference):
        return None
    return (f"timed on a busy machine (cpu_share {float(share):.2f} vs the search's median {reference:.2f}): "
            "run again (--strict-timing)")


def busy_attrs(trials: Sequence[FrozenTrial], attrs: dict[str, Any], asked: dict[str, Any]) -> dict[str, Any] | None:
    """The user attrs that turn a finished trial into a busy-machine FAIL to run again (``rerun_reason``), or None."""
    reason = rerun_reason(trials, attrs, asked)
    return None if reason is None else {"error": reason, BUSY_RERUNS: int(asked.get(BUSY_RERUNS) or 0) + 1}
