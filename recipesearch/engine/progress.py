"""What the user sees while a search runs: a live progress bar + Pareto-front table, or plain log lines.

Both UIs read the same trials table (``storage.trials_frame``), so what is shown is what trials.csv
holds. The numbers are ``recipesearch.analysis.frontier``'s (the report's definitions, on the metric
the space selects on); ``front_table`` turns them into rows (a plain DataFrame, tested without a
terminal) and the live view and the final summary only render those.
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pandas as pd

from recipesearch.analysis import Frontier, frontier, largest_front_speedup
from recipesearch.engine.study import INTERRUPTED, count_finished_rows

if TYPE_CHECKING:
    from recipesearch.space import SearchSpace

MAX_FRONT_ROWS = 12
FRONT_COLUMNS = ["number", "budget", "algorithms", "is_baseline", "acc", "train_seconds", "cost", "speedup",
                 "speedup_status"]


class SearchUI(Protocol):
    def start(self, *, space: SearchSpace, total: int, done: int, run_dir: Path, ray_address: str) -> None: ...
    def trial_started(self, number: int, attrs: dict[str, Any]) -> None: ...
    def trial_finished(self, row: dict[str, Any], trials: pd.DataFrame) -> None: ...
    def message(self, text: str) -> None: ...
    def stop(self) -> None: ...
    def summary(self, trials: pd.DataFrame, space: SearchSpace) -> None: ...


# 1) numbers: one ``analysis.frontier`` per refresh, rendered as rows and lines -------------------------


def completed(trials: pd.DataFrame, space: SearchSpace) -> pd.DataFrame:
    """The completed rows of ``trials`` (``analysis.frontier``'s definition)."""
    if trials.empty:
        return trials
    return trials[frontier(trials, space).completed.to_numpy()]


def _front_rows(f: Frontier) -> pd.DataFrame:
    """The frontier as the table the UIs show: ``acc`` is the metric the space selects on."""
    front = f.front
    return pd.DataFrame({
        "number": front["number"].astype(int), "budget": front["budget"], "algorithms": front["algorithms"],
        "is_baseline": front["is_baseline"].astype(bool), "acc": front[f.metric],
        "train_seconds": front["train_seconds"], "cost": front["cost"], "speedup": front["speedup"],
        "speedup_status": front["speedup_status"],
    }, columns=FRONT_COLUMNS)  # fmt: skip


def front_table(trials: pd.DataFrame, space: SearchSpace) -> pd.DataFrame:
    """Current Pareto front of the completed trials, by training time, with speedup over the baseline.

    Columns: number, budget, algorithms, is_baseline, acc, train_seconds, cost, speedup, speedup_status.
    """
    return _front_rows(frontier(trials, space))


def _headline_text(f: Frontier) -> str | None:
    h = f.headline
    done = f.completed_trials
    if done.empty or not done["is_baseline"].any() or done["is_baseline"].all():
        return None
    if h.number is None or not math.isfinite(h.speedup):
        return (f"no recipe reached the longest baseline's {f.metric} {h.baseline_accuracy:.4f}"
                if math.isfinite(h.baseline_accuracy) else None)
    return (f"speedup at the longest baseline's {f.metric} {h.baseline_accuracy:.4f}: {h.speedup:.2f}x "
            f"({h.recipe_seconds:.2f} s vs {h.baseline_seconds:.2f} s): trial {h.number}, budget "
            f"{h.recipe_budget:g}, {h.algorithms or 'no algorithms'}")


def headline(trials: pd.DataFrame, space: SearchSpace) -> str | None:
    """'speedup at the longest baseline's accuracy 0.9421: 1.80x (...): trial 12, ...' or None."""
    return _headline_text(frontier(trials, space))


def front_headline(front: pd.DataFrame) -> str | None:
    """The largest measured (interpolated, not a bound) speedup at matched accuracy on ``front_table``."""
    top = largest_front_speedup(front, "acc")
    if top is None:
        return None
    return (f"largest speedup at matched accuracy on the front: {top['speedup']:.2f}x at {top['acc']:.4f} "
            f"({top['train_seconds']:.2f} s): trial {int(top['number'])}, budget {top['budget']:g}, "
            f"{top['algorithms'] or 'no algorithms'}")


def _fmt(x: Any, spec: str) -> str:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return ""
    return "" if math.isnan(x) else format(x, spec)


def render_front(front: pd.DataFrame, space: SearchSpace, title: str) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    acc_label = "val acc" if space.metric_split == "val" else "accuracy"
    for name in ("trial", "budget", "algorithms", acc_label, "train s", *(["cost"] if "cost" in space.objectives
                                                                            else []), "speedup"):
        table.add_column(name, justify="left" if name == "algorithms" else "right")
    for _, r in front.head(MAX_FRONT_ROWS).iterrows():
        algs = "baseline" if r["is_baseline"] else (r["algorithms"] or "-")
        cells = [str(r["number"]), _fmt(r["budget"], "g"), algs, _fmt(r["acc"], ".4f"), _fmt(r["train_seconds"], ".2f")]
        if "cost" in space.objectives:
            cells.append(_fmt(r["cost"], ".4g"))
        cells.append(f"{_fmt(r['speedup'], '.2f')}x" if _fmt(r["speedup"], ".2f") else "")
        table.add_row(*cells)
    if len(front) > MAX_FRONT_ROWS:
        table.caption = f"... and {len(front) - MAX_FRONT_ROWS} more on the front"
    return table


def _counts(trials: pd.DataFrame) -> dict[str, int]:
    if trials.empty:
        return {}
    return {str(k): int(v) for k, v in trials["state"].value_counts().items()}


# 2) renderers ---------------------------------------------------------------------------------------


class LiveUI:
    """rich progress bar (done/total, elapsed, ETA) above a live table of the current Pareto front."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=False)
        self.live: Any = None
        self.space: SearchSpace | None = None
        self.running: set[int] = set()

    def start(self, *, space: SearchSpace, total: int, done: int, run_dir: Path, ray_address: str) -> None:
        from rich.live import Live
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.space = space
        self.console.print(f"[bold]recipesearch search[/] {space.name}: {total} trials, objectives "
                           f"{', '.join(space.objectives)}; run dir {run_dir}; Ray {ray_address}")
        self.progress = Progress(TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("elapsed"), TimeElapsedColumn(), TextColumn("eta"),
                                 TimeRemainingColumn(), TextColumn("{task.fields[status]}"),
                                 console=self.console)
        self.task = self.progress.add_task("search", total=total, completed=0, status="")
        self._done0 = done
        self.progress.update(self.task, completed=done)
        self._front = render_front(front_table(pd.DataFrame(), space), space, "Pareto front")
        self.live = Live(self._renderable(), console=self.console, refresh_per_second=4, transient=True)
        self.live.start()

    def _renderable(self) -> Any:
        from rich.console import Group

        return Group(self.progress, self._front)

    def _status(self, trials: pd.DataFrame | None = None) -> str:
        c = _counts(trials) if trials is not None else {}
        parts = [f"{len(self.running)} running"]
        if c.get("FAIL"):
            parts.append(f"{c['FAIL']} failed")
        return "  " + ", ".join(parts)

    def trial_started(self, number: int, attrs: dict[str, Any]) -> None:
        self.running.add(number)
        if self.live:
            self.progress.update(self.task, status=self._status())

    def trial_finished(self, row: dict[str, Any], trials: pd.DataFrame) -> None:
        self.running.discard(int(row["number"]))
        if row["state"] == "FAIL" and row.get("error") != INTERRUPTED:
            self.console.print(f"[yellow]trial {row['number']} failed:[/] {row.get('error')}")
        if not self.live or self.space is None:
            return
        self.progress.update(self.task, completed=count_finished_rows(trials), status=self._status(trials))
        self._front = render_front(front_table(trials, self.space), self.space, "Pareto front")
        self.live.update(self._renderable())

    def message(self, text: str) -> None:
        self.console.print(text)

    def stop(self) -> None:
        if self.live:
            self.live.stop()
            self.live = None

    def summary(self, trials: pd.DataFrame, space: SearchSpace) -> None:
        _print_summary(self.console, trials, space)


class LogUI:
    """--quiet: one plain line per event, for logs and CI."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stdout
        self.t0 = time.monotonic()
        self.total = 0

    def _line(self, text: str) -> None:
        print(f"[{time.monotonic() - self.t0:7.1f}s] {text}", file=self.stream, flush=True)

    def start(self, *, space: SearchSpace, total: int, done: int, run_dir: Path, ray_address: str) -> None:
        self.total = total
        self._line(f"search {space.name}: {total} trials ({done} done), run dir {run_dir}, Ray {ray_address}")

    def trial_started(self, number: int, attrs: dict[str, Any]) -> None:
        tag = " baseline" if attrs.get("is_baseline") else ""
        self._line(f"trial {number} started: budget {attrs.get('budget')}{tag} "
                   f"{attrs.get('algorithms') or ''}".rstrip())

    def trial_finished(self, row: dict[str, Any], trials: pd.DataFrame) -> None:
        done = count_finished_rows(trials)
        if row["state"] == "COMPLETE":
            self._line(f"[{done}/{self.total}] trial {row['number']} COMPLETE accuracy {_fmt(row['accuracy'], '.4f')} "
                       f"train {_fmt(row['train_seconds'], '.2f')} s budget {row['budget']} "
                       f"{row['algorithms'] or ''}".rstrip())
        else:
            self._line(f"[{done}/{self.total}] trial {row['number']} {row['state']}: {row.get('error')}")

    def message(self, text: str) -> None:
        self._line(text)

    def stop(self) -> None:
        pass

    def summary(self, trials: pd.DataFrame, space: SearchSpace) -> None:
        from rich.console import Console

        _print_summary(Console(file=self.stream, width=120, no_color=True, highlight=False), trials, space)


def _print_summary(console: Any, trials: pd.DataFrame, space: SearchSpace) -> None:
    c = _counts(trials)
    console.print(f"done: {c.get('COMPLETE', 0)} completed, {c.get('FAIL', 0)} failed"
                  + (f" ({int((trials['error'] == INTERRUPTED).sum())} interrupted)"
                     if "error" in trials and (trials["error"] == INTERRUPTED).any() else ""))
    f = frontier(trials, space)  # once: the table and both headline lines read it
    front = _front_rows(f)
    if len(front):
        console.print(render_front(front, space, f"Pareto front ({len(front)} trials)"))
    for line in (front_headline(front), _headline_text(f)):
        if line:
            console.print(line)


def make_ui(quiet: bool) -> SearchUI:
    """The live display on a terminal; log lines with --quiet or when stdout is a file or a pipe."""
    return LogUI() if quiet or not sys.stdout.isatty() else LiveUI()
