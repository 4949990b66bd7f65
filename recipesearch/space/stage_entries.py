"""The space file's stage sections as pydantic models: ``baseline`` (the base recipe's runs before any
proposal), ``confirm`` (the confirmation stage after them) and ``simplify`` (the stage after that). What
``SpaceFile`` checks across sections (enough trials for the baseline, simplify needing the confirmation)
is in ``schema.py``; the validated values are ``stages.py``'s specs."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from recipesearch.space.section import Section

LR_SWEEP_RUNS = 3  # baseline.tune_lr: the base LR and two ladder steps down and up (BaselineEntry)


class BaselineEntry(Section):
    """``baseline: {seeds: 3, tune_lr: false}``: the base recipe's runs, before any proposal.

    ``seeds``: runs of the base recipe at every budget (the baseline curve is their mean with a 95 %
    interval). ``tune_lr``: first train the base recipe at the budget nearest 1 with its LR and the LR two
    ladder steps down and up (``hparams.optimizer.lr``'s ladder: 0.5x / 2x for ``scale: [0.5, 2]``); the
    baseline then runs at the LR that did best on the selection metric, as the Mosaic posts insist on
    tuned baselines. ``seeds_elsewhere`` (default: ``seeds``): runs at the budgets other than the budget nearest 1
    and the one below it, the two the target (``target: baseline``) is read at; one seed there still draws the
    baseline's curve for the plot and the sampler; a claim needs repeated seeds where it is read (a front point's
    interval leaves the lone runs out, a recipe curve keeps them as fixed anchors: ``speedup_bootstrap._min_seeds``).
    It saves what a first claim costs (benchmarks §13).
    """

    seeds: int = Field(3, ge=1, le=50)
    seeds_elsewhere: int | None = Field(None, ge=1, le=50)
    tune_lr: bool = False


class ConfirmEntry(Section):
    """``confirm: {top_k: 5, seeds: 3, max_share: 0.55}`` or ``confirm: false``: the confirmation stage.

    After the proposals, up to ``top_k`` non-dominated candidates (on the selection metric) are trained
    again with ``seeds`` seeds in all at the two budgets where the proposal's run says its curve crosses the
    target (engine/confirm.py ``curve_runs``), so each has a tradeoff curve with confidence intervals.
    Candidates are taken in order while the stage's estimated compute stays within ``max_share`` of the whole
    search's (proposals, baselines and confirmation together). ``sequential``: a candidate whose interval still
    straddles 1 after ``seeds`` seeds gets one more at every budget
    (analysis/sequential.py); one decided either way gets none. ``paired_baseline``: ``probe`` (the default)
    re-runs one baseline run beside the candidates, as a check of the machine's speed, and re-runs the whole
    baseline only when that run's time moved (analysis/paired_baseline.py); ``full`` always re-runs it all, as
    does ``probe`` when ``baseline.seeds`` is 1 (no claim can be measured against one seed). ``early`` (1.5): a
    proposal whose own run reached the target at least this many times faster than the baseline is confirmed at
    once, while the proposals go on (``null``: only after them; engine/confirm_stage.py ``plan_early``).
    ``stop_at_claim``: the search ends as soon as such a claim stands at the target (no more proposals, no other
    candidate): the cheapest confirmed recipe rather than the best one.
    """

    enabled: bool = True
    top_k: int = Field(5, ge=1, le=100)
    seeds: int = Field(3, ge=2, le=50)
    max_share: float = Field(0.55, gt=0, le=0.9)
    sequential: bool = False
    paired_baseline: Literal["probe", "full"] = "probe"
    early: float | None = Field(1.5, ge=1)
    stop_at_claim: bool = False

    @classmethod
    def coerce(cls, data: Any) -> Any:
        return {"enabled": data} if isinstance(data, bool) else data


class SimplifyEntry(Section):
    """``simplify: true`` or ``simplify: {budget: 2}``: after the confirmation, the headline recipe without each
    of its methods at ``budget`` (default: the largest budget), then without every method it does not need,
    as a new curve (engine/simplify.py). Off by default. Operational, like ``scheduler``: not part of the
    space hash, so a finished search can be resumed with it (``--simplify``)."""

    enabled: bool = True  # ``simplify: {}`` turns it on; a space without the section has it off
    budget: float | None = Field(None, gt=0)

    @classmethod
    def coerce(cls, data: Any) -> Any:
        return {"enabled": data} if isinstance(data, bool) else data
