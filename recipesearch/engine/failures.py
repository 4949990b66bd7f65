"""A search whose trials all fail the same way stops early: the same broken user code, dataset or option
fails every trial alike, and training the rest of the budget would only repeat the error."""
from __future__ import annotations

import re
from collections.abc import Sequence

from optuna.trial import FrozenTrial, TrialState

ALIKE = 3  # this many failed trials with one reason, and nothing completed: the search stops


def _reason(trial: FrozenTrial) -> str:
    # the trial's own number (and a recipe id) differ between otherwise identical failures
    text = str(trial.user_attrs.get("error") or "")
    return re.sub(r"\btrial \d+\b", "trial N", text).strip()


def failing_alike(trials: Sequence[FrozenTrial], alike: int = ALIKE) -> str | None:
    """The one reason every finished trial failed for, once ``alike`` have and none completed or was pruned;
    None otherwise. A lost worker (``worker_lost``) is the machine's failure, not the recipe's: never counted."""
    finished = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
                and t.user_attrs.get("error") != "interrupted"]  # Ctrl-C's, queued again: not the recipe's
    if any(t.state != TrialState.FAIL for t in finished):
        return None
    failed = [t for t in finished if not t.user_attrs.get("worker_lost") and t.user_attrs.get("error")]
    if len(failed) < alike or len(failed) != len(finished):
        return None
    reasons = {_reason(t) for t in failed}
    return reasons.pop() if len(reasons) == 1 else None


def stop_message(reason: str, count: int) -> str:
    return (f"stopped early: the first {count} trials all failed the same way and none completed: {reason}; "
            "fix it and run the search again with --force (or --resume)")
