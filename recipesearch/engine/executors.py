"""Executors run the loop's proposals. ``InProcess`` trains in this process, one proposal after another.

It serves tests, replay (its objective is a table lookup) and small runs that need no Ray: trials are
asked ``concurrency`` at a time and told in the order asked, as the results of that many parallel
trials would come back. The Ray Tune executor (``recipesearch.engine.ray_tune``) runs the same loop with
trials on a Ray cluster.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recipesearch.engine.loop import Proposal, SearchLoop


def train_proposal(proposal: Proposal) -> dict[str, Any]:
    """Train the proposal's recipe in this process (the same function a Ray trial runs)."""
    from recipesearch.engine.trial import run_recipe

    return run_recipe(proposal.config, on_rung=proposal.on_rung)


class InProcess:
    name = "inprocess"

    def __init__(self, objective: Callable[[Proposal], dict[str, Any] | None] = train_proposal,
                 concurrency: int = 1):
        self.objective, self.concurrency = objective, max(1, int(concurrency))

    def run(self, loop: SearchLoop) -> None:
        # One round asks at most the trials still to run, as Tune's num_samples does: trials that come
        # back interrupted are run again by the loop's next round, not spun on here.
        left = loop.remaining()
        while left > 0:
            batch: list[Proposal] = []
            while len(batch) < min(self.concurrency, left):
                proposal = loop.ask()
                if not isinstance(proposal, Proposal):
                    break
                batch.append(proposal)
            left -= len(batch)
            if not batch:
                return  # DONE, or WAIT with nothing of ours in flight: the round is over
            for proposal in batch:
                loop.tell(proposal, self.objective(proposal))
