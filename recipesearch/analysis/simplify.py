"""Which methods a recipe does without: the Amdahl step after confirmation, on plain arrays.

Methods are not free (each costs time per step, or buys accuracy per step), and their effects do not add
up: two that cut the same cost, or a regulariser that a long budget no longer needs, leave a recipe slower
than it has to be. The simplify stage (engine/simplify.py) trains the confirmed headline recipe without each
of its methods, one at a time, with the confirmation's seeds at one budget; this module says which
removals to keep.

Rule, per method: drop it when the recipe without it is **no slower** (mean train_seconds at most the whole
recipe's) and **no less accurate beyond the noise**: its mean selection metric (validation accuracy, never
test) is at least the whole recipe's minus one standard error of the difference of the two means (Welch:
sqrt(s1²/n1 + s2²/n2), sample variances; 0 with one seed). A method whose removal has no finite
measurement is kept (no evidence). The methods dropped together can interact, so the stage does not trust
the sum: the recipe without all of them is trained as a new curve, at every budget with the same seeds,
and the frontier judges it like any other confirmed recipe.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

Runs = tuple[Sequence[float], Sequence[float]]  # (selection metric per seed, train_seconds per seed)


@dataclass(frozen=True)
class Removal:
    method: str
    seeds: int  # finite runs without the method
    accuracy_change: float  # mean metric without - with (NaN: no finite runs)
    noise: float  # standard error of that difference
    seconds_ratio: float  # mean train_seconds without / with
    drop: bool

    def describe(self) -> str:
        if not self.seeds:
            return f"{self.method}: kept (no finished run without it)"
        verdict = "dropped" if self.drop else "kept"
        return (f"{self.method}: {verdict} (without it {self.accuracy_change * 100:+.2f} pp ± "
                f"{self.noise * 100:.2f}, x{self.seconds_ratio:.2f} time)")


    def to_dict(self) -> dict[str, float | int | str | bool]:
        return {"method": self.method, "seeds": self.seeds, "accuracy_change": self.accuracy_change,
                "noise": self.noise, "seconds_ratio": self.seconds_ratio, "drop": self.drop}

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> Removal:
        def num(key: str) -> float:
            v = d.get(key)
            return float(v) if isinstance(v, (int, float)) else math.nan

        return cls(str(d.get("method", "?")), int(num("seeds")) if math.isfinite(num("seeds")) else 0,
                   num("accuracy_change"), num("noise"), num("seconds_ratio"), bool(d.get("drop")))


def verdicts_text(recipe: int | None, budget: float | None, verdicts: Sequence[Removal]) -> str:
    """One line: what the stage decided for ``recipe``'s methods (the CLI message, run.json, the report)."""
    dropped = [r.method for r in verdicts if r.drop]
    at = f" at budget {budget:g}" if budget is not None else ""
    head = (f"trial {recipe}'s recipe needs every method{at}" if not dropped else
            f"trial {recipe}'s recipe does without {', '.join(dropped)}{at}; the recipe without "
            f"{'it' if len(dropped) == 1 else 'them'} is trained as a new curve")
    return f"{head} ({'; '.join(r.describe() for r in verdicts)})"


def _finite(runs: Runs) -> tuple[np.ndarray, np.ndarray]:
    acc, secs = np.asarray(runs[0], float), np.asarray(runs[1], float)
    ok = np.isfinite(acc) & np.isfinite(secs)
    return acc[ok], secs[ok]


def _var_of_mean(x: np.ndarray) -> float:
    return float(np.var(x, ddof=1) / len(x)) if len(x) > 1 else 0.0


def removals(whole: Runs, without: Mapping[str, Runs]) -> list[Removal]:
    """One verdict per method of ``without`` (module docstring), in the order given."""
    w_acc, w_secs = _finite(whole)
    out = []
    for method, runs in without.items():
        acc, secs = _finite(runs)
        if not len(acc) or not len(w_acc):
            out.append(Removal(method, len(acc), math.nan, math.nan, math.nan, False))
            continue
        change = float(acc.mean() - w_acc.mean())
        noise = math.sqrt(_var_of_mean(acc) + _var_of_mean(w_acc))
        ratio = float(secs.mean() / w_secs.mean()) if w_secs.mean() > 0 else math.nan
        drop = bool(ratio <= 1.0 and change >= -noise)
        out.append(Removal(method, len(acc), change, noise, ratio, drop))
    return out
