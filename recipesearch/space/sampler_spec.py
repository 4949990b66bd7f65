"""Which samplers a space may name, the options each accepts, and the validated choice (``SamplerSpec``).

The table lives with the space schema (not in ``recipesearch.engine.samplers``) so that loading a space
never imports the search package; ``search/samplers.py`` reads it from here to build the Optuna sampler.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SAMPLERS = ("tpe", "nsga2", "gp", "random", "sweep")

# Options a space may pass to each sampler's constructor (checked when the space is loaded; Optuna checks
# the values when the sampler is built).
SAMPLER_OPTIONS: dict[str, tuple[str, ...]] = {
    "tpe": (
        "n_startup_trials", "n_ei_candidates", "multivariate", "group", "constant_liar", "consider_endpoints",
        "consider_magic_clip", "consider_prior", "prior_weight", "warn_independent_sampling",
    ),
    "nsga2": ("population_size", "mutation_prob", "crossover_prob", "swapping_prob"),
    "gp": ("n_startup_trials", "deterministic_objective", "warn_independent_sampling"),
    "random": (),
    "sweep": (),
}


@dataclass(frozen=True)
class SamplerSpec:
    """The sampler a search uses: its name in ``SAMPLERS``, its seed, its constructor options."""

    name: str = "tpe"
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)
