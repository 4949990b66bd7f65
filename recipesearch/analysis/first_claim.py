"""When a search's first claim at the target stood: what it had cost by then, replayed from its trials.

A search goes on after its first confirmed claim (more proposals, more candidates), so its total cost overstates
what it took to get a confirmed recipe; a user watching the live table could have stopped there. Replaying the
finished runs in the order they finished, the headline is recomputed (``frontier``) after each confirmation run;
the first prefix whose headline is confirmed at the target gives the cost, in trainings of the baseline at the
reference budget (the whole search's unit, ``Payback.unit_seconds``). A claim counts once its curve has
``min_seeds`` seeds at each budget, as the confirmation stage trains it: a headline on 2 seeds may look confirmed
before the confirmation's rule has looked at it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from recipesearch.analysis.frontier import frontier
from recipesearch.analysis.objective_spec import ObjectiveSpec
from recipesearch.trials_columns import CONFIRM, TIME


@dataclass(frozen=True)
class FirstClaim:
    trainings: float  # the search's cost when the claim first stood
    number: int  # the confirmation run that made it stand
    verdict: str  # the headline's verdict at that moment


def first_claim(trials: pd.DataFrame, space: ObjectiveSpec, min_seeds: int = 3) -> FirstClaim | None:
    """The first moment the headline was confirmed at the target on ``min_seeds`` seeds or more (module
    docstring); None: it never was."""
    unit = frontier(trials, space).payback.unit_seconds
    if trials.empty or "datetime_complete" not in trials or not unit > 0:
        return None
    rows = trials.assign(_done=pd.to_datetime(trials["datetime_complete"], errors="coerce"))
    rows = rows.sort_values(["_done", "number"], na_position="last").reset_index(drop=True)
    spent = pd.to_numeric(rows[TIME], errors="coerce").fillna(0.0).cumsum().to_numpy() / unit
    for i in np.flatnonzero(rows["stage"].eq(CONFIRM).to_numpy() & rows["_done"].notna().to_numpy()):
        h = frontier(rows.iloc[: i + 1].drop(columns="_done"), space).headline
        if h.confirmed and h.n_seeds >= min_seeds:
            return FirstClaim(float(spent[i]), int(rows.loc[i, "number"]), h.verdict)
    return None
