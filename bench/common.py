"""Shared helpers of the benchmarks: where results go, the environment block, robust statistics, tables.

Every benchmark writes one JSON file ``reports/bench/<name>.json`` holding its raw measurements, its
summary and the environment it ran in; ``bench.run_all`` renders all of them into ``reports/benchmarks.md``.
Timings on a shared CPU are noisy, so the helpers here report medians with the IQR and min–max, and
``interleave`` runs the arms of a comparison in rotating order so slow drifts hit every arm alike.
"""
from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "reports"
BENCH_DIR = REPORTS / "bench"


def environment() -> dict[str, Any]:
    """Hardware, library versions and the machine's load when the benchmark started."""
    from recipesearch.env_info import hardware, library_versions

    env: dict[str, Any] = {
        "hardware": hardware(),
        "versions": library_versions(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    try:
        env["load_average_at_start"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    return env


def load_now() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def fit_or_nan(data: dict[str, Any], source: str) -> dict[str, Any]:
    """Train one arm's recipe; its accuracy, times and throughput, or NaN and the error when it fails, so one
    broken arm does not lose the others' runs."""
    from recipesearch.recipe import recipe_from_dict
    from recipesearch.train.loop import fit

    try:
        res = fit(recipe_from_dict(data, source=source))
    except Exception as exc:  # noqa: BLE001 - a failed arm is a result
        return {"accuracy": math.nan, "train_seconds": math.nan, "error": f"{type(exc).__name__}: {exc}"[:300]}
    return {"accuracy": res.accuracy, "train_seconds": res.train_seconds, "eval_seconds": res.eval_seconds,
            "throughput": res.throughput, "data_wait_fraction": res.data_wait_fraction}


def summarize(values: Iterable[float]) -> dict[str, float]:
    """median, quartiles, min, max and n of the finite values (NaN everywhere when none)."""
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    if len(v) == 0:
        return {"median": math.nan, "q1": math.nan, "q3": math.nan, "min": math.nan, "max": math.nan, "n": 0}
    q1, med, q3 = np.percentile(v, [25, 50, 75])
    return {"median": float(med), "q1": float(q1), "q3": float(q3),
            "min": float(v.min()), "max": float(v.max()), "n": int(len(v))}


def fmt(x: float | None, spec: str = ".3g") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return format(x, spec)


def fmt_summary(s: dict[str, float], spec: str = ".3g", spread: str = "iqr") -> str:
    """``1.23 [1.10–1.30]``: the median with the IQR (or min–max) in brackets."""
    if not s or s.get("n", 0) == 0:
        return "–"
    if s["n"] == 1:
        return fmt(s["median"], spec)
    lo, hi = (s["q1"], s["q3"]) if spread == "iqr" else (s["min"], s["max"])
    return f"{fmt(s['median'], spec)} [{fmt(lo, spec)}–{fmt(hi, spec)}]"


def interleave(arms: Sequence[str], repeats: int) -> Iterator[tuple[int, str]]:
    """(repeat, arm) pairs: every repeat runs every arm once, the order rotated by one each repeat.

    Rotation (a Latin square over repeats) puts each arm first, second, ... equally often, so neither a
    warm cache nor a slow drift of the machine's load favours one arm.
    """
    n = len(arms)
    for r in range(repeats):
        for i in range(n):
            yield r, arms[(i + r) % n]


def save_result(name: str, result: dict[str, Any]) -> Path:
    """Write a benchmark's results to ``reports/bench/<name>.json``."""
    return write_json(BENCH_DIR / f"{name}.json", result)


def write_json(path: Path, result: dict[str, Any]) -> Path:
    """Write ``result`` to ``path`` through a temporary file, so a crash mid-write leaves the old file whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1, default=json_default, allow_nan=True) + "\n")
    tmp.replace(path)
    return path


def load_result(name: str) -> dict[str, Any] | None:
    path = BENCH_DIR / f"{name}.json"
    if not path.exists():
        return None
    return json.loads(path.read_text())


def json_default(obj: Any) -> Any:
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def md_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |")
    return "\n".join(lines)


def env_lines(env: dict[str, Any] | None) -> str:
    """One markdown paragraph: CPU, cores, threads, load, versions."""
    if not env:
        return "_environment not recorded_"
    hw, v = env.get("hardware", {}), env.get("versions", {})
    vers = ", ".join(f"{k} {val}" for k, val in v.items())
    load = env.get("load_average_at_start")
    load_s = f"; load average at start {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f} (1/5/15 min)" if load else ""
    gpu = f"; GPU {hw['gpu']}" if hw.get("gpu") else "; no GPU"
    return (f"Hardware: {hw.get('cpu', '?')}, {hw.get('usable_cpus', '?')} usable CPU(s){gpu}; "
            f"{hw.get('platform', '')}{load_s}. Run started {env.get('started', '?')}. Versions: {vers}.")


def goal_text(met: bool | None) -> str:
    if met is None:
        return "**not measured**"
    return "**met**" if met else "**not met**"


def rel(path: Path) -> str:
    """Path relative to reports/ (links in benchmarks.md)."""
    try:
        return str(Path(path).resolve().relative_to(REPORTS))
    except ValueError:
        return str(path)


def save_figure(fig: Any, name: str) -> str:
    """Save a matplotlib figure as reports/bench/<name>.png; returns its path relative to reports/."""
    import matplotlib.pyplot as plt

    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    path = BENCH_DIR / f"{name}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return rel(path)
