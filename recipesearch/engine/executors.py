"""Executors run the loop's proposals. ``InProcess`` trains in this process, one proposal after another.

It serves tests, replay (its objective is a table lookup) and small runs that need no Ray: trials are
asked ``concurrency`` at a time and told in the order asked, as the results of that many parallel
trials would come back. The Ray Tune executor (``recipesearch.engine.ray_tune``) runs the same loop with
trials on a Ray cluster.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from recipesearch.engine.checkpoints import CheckpointStore
from recipesearch.engine.loop import SearchLoop
from recipesearch.engine.proposal import Proposal


def train_proposal(proposal: Proposal, checkpoints: CheckpointStore | None = None) -> dict[str, Any]:
    """Train the proposal's recipe in this process (the same function a Ray trial runs). With ``checkpoints``
    (and ``config["checkpoint_seconds"]``) the trial checkpoints into that store, in Tune's layout, and a
    re-run goes on from its predecessor's latest checkpoint. It passes the fault points a Ray trial passes
    (start, rungs, checkpoints: engine/faults.py)."""
    from recipesearch.engine import faults
    from recipesearch.engine.trial import run_recipe, start_trial

    config = start_trial(proposal.config)
    where: dict[str, Any] = {}
    if checkpoints is not None and config.get("checkpoint_seconds"):
        trial_dir = checkpoints.root / "inprocess" / f"trial_{proposal.number:05d}_local"
        where["checkpoint_dir"] = trial_dir / "checkpoint_000000"
        where["resume_from"] = checkpoints.latest(config.get("resume_of") or [])
        where["on_checkpoint"] = faults.checkpoint_point(config)  # called once the checkpoint is in the store
    return run_recipe(config, on_rung=proposal.on_rung, **where)


class InProcess:
    name = "inprocess"

    def __init__(self, objective: Callable[[Proposal], dict[str, Any] | None] | None = None,
                 concurrency: int = 1, checkpoints: CheckpointStore | None = None):
        self.objective = objective or partial(train_proposal, checkpoints=checkpoints)
        self.concurrency, self.checkpoints = max(1, int(concurrency)), checkpoints

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
                result = self.objective(proposal)
                loop.tell(proposal, result)
                if result and self.checkpoints is not None:  # finished: its checkpoints are done with
                    self.checkpoints.forget([proposal.number, *(proposal.config.get("resume_of") or [])])
