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


# Range of each numeric option, as (kind, low, high) with None for unbounded: Optuna accepts some absurd
# values without a word (a negative n_startup_trials silently means "no startup").
OPTION_RANGES: dict[str, tuple[str, float | None, float | None]] = {
    "n_startup_trials": ("int", 0, None), "n_ei_candidates": ("int", 1, None), "population_size": ("int", 2, None),
    "prior_weight": ("float", 0, None), "mutation_prob": ("float", 0, 1), "crossover_prob": ("float", 0, 1),
    "swapping_prob": ("float", 0, 1),
}
BOOL_OPTIONS = ("multivariate", "group", "constant_liar", "consider_endpoints", "consider_magic_clip",
                "consider_prior", "warn_independent_sampling", "deterministic_objective")


def option_problem(name: str, value: Any) -> str | None:
    """Why ``value`` is no value for sampler option ``name`` (None: fine)."""
    if name in BOOL_OPTIONS:
        return None if isinstance(value, bool) else f"must be true or false, got {value!r}"
    if name not in OPTION_RANGES:
        return None
    kind, low, high = OPTION_RANGES[name]
    whole = isinstance(value, (int, float)) and float(value).is_integer()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind == "int" and not whole):
        return f"must be {'an integer' if kind == 'int' else 'a number'}, got {value!r}"
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f">= {low:g}" if high is None else f"in [{low:g}, {high:g}]"
        return f"must be {bounds}, got {value!r}"
    return None


@dataclass(frozen=True)
class SamplerSpec:
    """The sampler a search uses: its name in ``SAMPLERS``, its seed, its constructor options."""

    name: str = "tpe"
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)
