"""The replication's results in words: the command's summary and the report section's rows.

Reads replication.csv's table (``analysis.replication.CLAIM_COLUMNS``); computes nothing new."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from recipesearch.analysis.replication import inside_share


def _x(value: float) -> str:
    return f"{value:.2f}x" if isinstance(value, (int, float)) and math.isfinite(value) else "n/a"


def _interval(low: float, high: float) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return f" [{low:.2f}-{high:.2f}]"


def claim_line(row: pd.Series) -> str:
    what = f"{row['kind']} of trial {int(row['number'])} ({row['algorithms'] or 'baseline'}, budgets {row['budgets']})"
    fresh = f"{_x(row['fresh_speedup'])}{_interval(row['fresh_ci_low'], row['fresh_ci_high'])}"
    where = "inside" if bool(row["inside"]) else "outside"
    reported = f"{_x(row['reported_speedup'])}{_interval(row['reported_ci_low'], row['reported_ci_high'])}"
    return f"{what}: reported {reported}, fresh on test {fresh} over {int(row['fresh_seeds'])} seed(s): {where}"


def conditions_line(scored: pd.DataFrame) -> str:
    hardware = sorted({h for text in scored["hardware"].dropna() for h in str(text).split("; ") if h})
    shares = [v for col in ("cpu_share_baseline", "cpu_share_recipe") for v in scored[col] if math.isfinite(v)]
    loads = [v for v in scored["load_1m"] if math.isfinite(v)]
    parts = [f"hardware: {', '.join(hardware) or 'unknown'}"]
    if shares:
        parts.append(f"cpu_share {min(shares):.2f}-{max(shares):.2f}")
    if loads:
        parts.append(f"1-min load {sum(loads) / len(loads):.2f}")
    return "; ".join(parts)


def summary_lines(scored: pd.DataFrame, verdict: str, claims: str, out: Path | None) -> list[str]:
    if scored.empty:
        return [f"no {'confirmed ' if claims != 'all' else ''}claim to replicate: {verdict}"]
    lines = [claim_line(row) for _, row in scored.iterrows()]
    share = inside_share(scored)
    n_inside = int(scored["inside"].astype(bool).sum())
    lines.append(f"inside the reported interval: {n_inside} of {len(scored)} claim(s)"
                 + (f" ({share:.0%})" if math.isfinite(share) else ""))
    lines.append(conditions_line(scored))
    if out is not None:
        lines.append(f"replication.csv: {out / 'replication.csv'}")
    return lines
