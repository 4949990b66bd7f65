"""Part A of search_efficiency: real searches (``recipesearch.engine.api.search``, through Ray) on the digits
space, one per arm and seed, arms interleaved within a seed.
"""
from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from bench.common import (
    ROOT,
    load_now,
)
from bench.search_efficiency.analysis import analyse
from bench.search_efficiency.config import DIGITS_SPACE, DIRECTIONS, REAL_ARMS, RUNS_DIR, SAMPLERS


def real_space(arm: str, seed: int, quick: bool) -> Any:
    """digits.yaml with the arm's sampler and scheduler (quick: budgets 0.25 and 0.5 only, 10 trials)."""
    import yaml

    from recipesearch.space import space_from_dict

    sampler, scheduler = REAL_ARMS.get(arm, (arm, "fifo"))
    data = yaml.safe_load(DIGITS_SPACE.read_text())
    data["scheduler"] = {"name": scheduler}
    options = {k: v for k, v in (data.get("sampler") or {}).items() if k not in ("name", "seed")}
    data["sampler"] = {"name": sampler, "seed": seed, **(options if sampler == data["sampler"]["name"] else {})}
    data["name"] = f"bench-{arm.replace('+', '-')}-{seed}"
    if quick:
        data["budgets"], data["trials"] = [0.25, 0.5], 10
    # Search efficiency compares the proposal stage: one baseline run per budget, no confirmation.
    data["baseline"], data["confirm"] = {"seeds": 1}, False
    return space_from_dict(data, source=str(DIGITS_SPACE), base_dir=DIGITS_SPACE.parent)


def run_real(samplers: tuple[str, ...], seeds: list[int], quick: bool) -> list[dict[str, Any]]:
    import pandas as pd

    from recipesearch.engine.api import search

    runs = []
    for seed in seeds:
        for sampler in samplers:  # samplers interleaved within a seed: load drifts hit all alike
            space = real_space(sampler, seed, quick)
            out = RUNS_DIR / f"{'quick-' if quick else ''}{sampler.replace('+', '-')}-{seed}"
            print(f"  real search: {sampler} seed {seed} -> {out}", flush=True)
            t0 = time.time()
            try:
                df = search(space, out=out, force=True, quiet=True).trials
            except Exception as exc:  # noqa: BLE001 - record and go on with the other samplers
                runs.append({"sampler": sampler, "seed": seed, "error": f"{type(exc).__name__}: {exc}"[:300]})
                continue
            wall = time.time() - t0
            df = df.copy()
            df["_end"] = pd.to_datetime(df["datetime_complete"])
            df = df.sort_values(["_end", "number"])
            trials = [{"number": int(r.number), "state": r.state,
                       "accuracy": float(r.accuracy) if r.state == "COMPLETE" else math.nan,
                       "train_seconds": float(r.train_seconds) if pd.notna(r.train_seconds) else math.nan,
                       "algorithms": r.algorithms if isinstance(r.algorithms, str) else "",
                       "budget": float(r.budget) if pd.notna(r.budget) else math.nan,
                       "duplicate_of": int(r.duplicate_of) if pd.notna(getattr(r, "duplicate_of", None)) else None}
                      for r in df.itertuples()]
            runs.append({"sampler": sampler, "seed": seed, "wall_seconds": wall, "trials": trials,
                         "run_dir": str(out.relative_to(ROOT)), "load": load_now()})
    return runs


def run_real_part(quick: bool, seeds_real: int | None) -> dict[str, Any]:
    """A) the real searches: every arm of ``REAL_ARMS`` with each seed, analysed like the replay."""
    from recipesearch.analysis import reference_point

    seeds = list(range(seeds_real or (1 if quick else 3)))
    runs = run_real(SAMPLERS, seeds, quick)
    ok = [r for r in runs if "trials" in r]
    allpts = np.array([[t["accuracy"], t["train_seconds"]] for r in ok for t in r["trials"]], dtype=float).reshape(-1, 2)
    ref_real = reference_point(allpts, list(DIRECTIONS))
    by = {s: [r["trials"] for r in ok if r["sampler"] == s] for s in SAMPLERS}
    ana_r = analyse({s: v for s, v in by.items() if v}, ref_real)
    return {
        "space": str(DIGITS_SPACE.relative_to(ROOT)) + (" (quick: budgets 0.25/0.5, 10 trials)" if quick else ""),
        "seeds": len(seeds), "runs": runs, "analysis": {k: v for k, v in ana_r.items() if k != "_curves"},
        "curves": {s: [[list(map(float, c[0])), list(map(float, c[1]))] for c in cs] for s, cs in ana_r["_curves"].items()},
    }
