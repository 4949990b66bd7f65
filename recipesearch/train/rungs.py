"""Rung reports: where a search's scheduler looks at a run part-way and may stop it.

``Trainer(rungs=..., on_rung=...)``: the rungs are fractions of the steps (``analysis.rungs.rung_step`` places
them). After each rung's step the clock pauses, the model is evaluated on ``rung_split`` (the split the search
selects on, never chosen to be test by a search), and ``on_rung`` gets ``{"rung", "step", "accuracy", "loss",
"train_seconds", "rung_eval_seconds"}`` (``train_seconds`` so far, the rung's evaluation left out); False stops
the run with ``TrialPruned``. The report's time (evaluation plus the scheduler's answer) is outside
``train_seconds`` and summed into ``TrainResult.rung_seconds``. Data-parallel: rank 0 evaluates and asks, and
every rank follows its answer (``distributed.agree``).
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from recipesearch.train import distributed
from recipesearch.train.evaluation import evaluate

if TYPE_CHECKING:
    from recipesearch.hooks import State
    from recipesearch.train.timing import DeviceClock, LossCheck

OnRung = Callable[[dict[str, Any]], bool]


class TrialPruned(Exception):  # noqa: N818 - a decision, not an error
    """A rung's scheduler stopped the run (``Trainer``'s ``on_rung`` returned False); ``report`` is that
    rung's report, the run's last result."""

    def __init__(self, report: dict[str, Any]):
        super().__init__(f"stopped at rung {report.get('rung')}")
        self.report = report


class Rungs:
    """One run's rungs: ``at`` maps the step after which a rung reports to its fraction; ``seconds`` is the time
    reports took so far (a resumed run's includes its earlier segments')."""

    def __init__(self, fractions: Sequence[float], on_rung: OnRung | None, split: str, total_steps: int,
                 rank: int = 0, world: int = 1):
        self.on_rung, self.split, self.rank, self.world = on_rung, split, rank, world
        self.seconds = 0.0
        self.at: dict[int, float] = {}
        if on_rung is not None and fractions:
            # here, not at module level: the analysis package imports pandas, which a run without rungs never needs
            from recipesearch.analysis.rungs import rung_step

            for fraction in fractions:
                step = rung_step(fraction, total_steps)
                if step is not None:
                    self.at.setdefault(step, fraction)

    def report(self, fraction: float, state: State, clock: DeviceClock, losses: LossCheck,
               prior_seconds: float) -> None:
        """Pause the clock, evaluate on the rung split, ask ``on_rung`` whether to go on (module docstring);
        ``prior_seconds``: the train seconds of the run's earlier segments."""
        train_seconds = prior_seconds + clock.pause()
        losses.drain()  # a diverged run fails here rather than reporting a rung
        paused = time.perf_counter()
        data = state.data
        split = data.val if self.split == "val" and data.val is not None and len(data.val) else data.test
        acc, loss = evaluate(state, split.images, split.labels) if self.rank == 0 else (math.nan, math.nan)
        clock.sync()
        report = {"rung": fraction, "step": state.step, "accuracy": acc, "loss": loss, "train_seconds": train_seconds,
                  "rung_eval_seconds": time.perf_counter() - paused}
        try:
            go_on = self.on_rung(report) if self.rank == 0 else True  # type: ignore[misc]
            if self.world > 1:
                go_on = distributed.agree(go_on, state.device)
        finally:
            self.seconds += time.perf_counter() - paused
        if not go_on:
            raise TrialPruned({**report, "rung_seconds": self.seconds})
        clock.resume()
