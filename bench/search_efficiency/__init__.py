"""Search efficiency: hypervolume against cumulative training time per sampler and scheduler.

Three parts, all reported:
A) Real searches: ``recipesearch.engine.api.search`` on ``search_spaces/digits.yaml`` with the sampler
   swapped, ``SEEDS_REAL`` seeds each (trials really train, through Ray). Trials are taken in completion
   order; cumulative training time = running sum of their train_seconds (compute, not wall time:
   concurrency does not flatter a sampler). One reference point for every run: ``reference_point`` of
   the union of all completed trials.
B) Replay (``bench/replay.py``): a discrete digits space (budgets x algorithm switches at their defaults)
   whose every recipe was trained once and recorded in ``reports/bench/replay_table_digits*.csv``, with
   its learning curve (accuracy and train_seconds so far after 1/9 and 1/3 of its steps, the rungs of
   ``scheduler: moasha`` at eta 3). Each arm (a sampler, with or without a scheduler: MO-ASHA stopping,
   promotion across budgets) searches that table with >= 20 seeds, the same trial count and concurrency
   as a real search; the scheduler is the search loop's own code, fed the recorded rung values. Exact
   lookups (every proposal is in the table). Hypervolume is normalised by the table's own (the best any
   search of that space can reach). A stopped trial costs its last rung's train_seconds.
C) Peer: Syne Tune's own ``MOASHA`` scheduler on the same table, driven through its scheduler API
   (``suggest`` / ``on_trial_add`` / ``on_trial_result`` / ``on_trial_remove``, exactly the calls Syne Tune's
   ``Tuner`` makes) by an explicit event clock with 2 workers, next to our MO-ASHA rule in the same
   driver (a control that separates the two rules from the two drivers).
Headline: the cumulative training time each arm needs to reach the final hypervolume of random search
(median over random's seeds), read off its median-over-seeds curve, as a ratio to random's own, with a
bootstrap interval over seeds. For the schedulers, the share of the full-budget frontier lost to trials
they stopped (replay knows every stopped trial's full-budget outcome).

The package's modules: ``config`` (arms, grid, goal), ``real`` (A), ``replay_arms`` (B), ``peers`` (C),
``analysis`` (the numbers of all three), ``render`` (the section) and ``run`` (the run and command line).
"""
from __future__ import annotations

from bench.search_efficiency.config import NAME, TITLE
from bench.search_efficiency.render import render
from bench.search_efficiency.run import main, run

__all__ = ["NAME", "TITLE", "main", "render", "run"]
