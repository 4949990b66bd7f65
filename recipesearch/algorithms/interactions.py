"""Known interactions between methods, declared next to the methods.

Hard rules refuse a recipe (ConfigError); soft rules are warnings shown by ``train`` and the report,
because the literature found the pair hurts in some regime but not always (composition is not additive).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from recipesearch.errors import ConfigError


@dataclass(frozen=True)
class Interaction:
    a: str
    b: str
    hard: bool
    reason: str


INTERACTIONS: tuple[Interaction, ...] = (
    Interaction("ema", "swa", True, "both replace the final weights with an average; use one"),
    Interaction("mixup", "cutmix", True, "alternative ways of mixing a batch; use one"),
    Interaction("randaugment", "trivialaugment", True, "alternative augmentation policies; use one"),
    Interaction("selective_backprop", "sam", True,
                "SAM's second pass needs the full batch that selective backprop has already dropped"),
    Interaction("selective_backprop", "proxy_selection", True,
                "both keep the hardest part of each batch, by the model's loss or a proxy's: use one"),
    Interaction("label_smoothing", "mixup", False,
                "MixUp already softens targets: together they hurt at short budgets (Composer's findings)"),
    Interaction("label_smoothing", "cutmix", False, "CutMix already softens targets; together they can hurt"),
    Interaction("blurpool", "progressive_resizing", False,
                "both cut spatial work early in training; their savings overlap (Amdahl)"),
    Interaction("pool_before_norm", "blurpool", False,
                "BlurPool's blur then runs before BN and the activation: a different network (-0.5 pp test on "
                "Fashion-MNIST at 3 epochs), not the same one made cheaper"),
    Interaction("layer_freezing", "stochastic_depth", False,
                "both cut backward cost of the same layers; savings overlap"),
)


def _pairs(names: list[str], hard: bool) -> list[Interaction]:
    present = set(names)
    return [r for r in INTERACTIONS if r.hard == hard and r.a in present and r.b in present]


def check_interactions(names: list[str], recipe: Any = None) -> None:
    """Refuse a forbidden pair with a one-line error naming both methods."""
    for rule in _pairs(names, hard=True):
        raise ConfigError(f"algorithms.{rule.b}", f"cannot be combined with {rule.a}: {rule.reason}")


def interaction_warnings(names: list[str]) -> list[str]:
    return [f"{r.a} + {r.b}: {r.reason}" for r in _pairs(names, hard=False)]


def forbidden_pairs() -> list[tuple[str, str]]:
    """Pairs a search space must never sample together."""
    return [(r.a, r.b) for r in INTERACTIONS if r.hard]
