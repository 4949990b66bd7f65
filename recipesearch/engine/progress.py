"""What the user sees while a search runs: a live progress bar + Pareto-front table, or plain log lines.

Both UIs read the same trials table (``storage.trials_frame``), so what is shown is what trials.csv
holds. The numbers are ``recipesearch.analysis.frontier``'s (the report's definitions, on the metric
the space selects on); ``front_table`` turns them into rows (a plain DataFrame, tested without a
terminal) and the live view and the final summary only render those. When the space selects on
validation, ``acc`` is the validation accuracy ("val acc") and ``test_acc`` the test accuracy, shown
next to it as the held-out figure ("test acc (held out)") and never used to choose.
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pandas as pd

from recipesearch.analysis import Frontier, frontier, interval_text
from recipesearch.analysis.frontier import finite
from recipesearch.analysis.objective_spec import TEST_SELECTION_WARNING
from recipesearch.engine.study import INTERRUPTED, count_finished_rows
from recipesearch.trials_columns import ACCURACY, TIME, VAL_ACCURACY

if TYPE_CHECKING:
    from recipesearch.space import SearchSpace

MAX_FRONT_ROWS = 12
FRONT_COLUMNS = ["number", "budget", "algorithms", "is_baseline", "n_seeds", "acc", "test_acc", "train_seconds",
                 "cost", "speedup", "speedup_status", "speedup_ci_low", "speedup_ci_high", "confirmed"]


class SearchUI(Protocol):
    def start(self, *, space: SearchSpace, total: int, done: int, run_dir: Path, ray_address: str,
              resources: str = "") -> None: ...
    def trial_started(self, number: int, attrs: dict[str, Any]) -> None: ...
    def trial_finished(self, row: dict[str, Any], trials: pd.DataFrame) -> None: ...
    def message(self, text: str) -> None: ...
    def stop(self) -> None: ...
    def summary(self, trials: pd.DataFrame, space: SearchSpace) -> None: ...


# 1) numbers: one ``analysis.frontier`` per refresh, rendered as rows and lines -------------------------


def busy_text(row: dict[str, Any], trials: pd.DataFrame) -> str:
    """' (busy machine: cpu_share 0.41 vs median 0.97)' for a trial timed on a busy machine (analysis.load)."""
    from recipesearch.analysis.load import is_busy, reference_share

    share = row.get("cpu_share")
    if not finite(share) or "cpu_share" not in trials:
        return ""
    reference = reference_share(trials.loc[trials["state"].eq("COMPLETE"), "cpu_share"])
    if not is_busy(float(share), reference):
        return ""
    return f" (busy machine: cpu_share {float(share):.2f} vs median {reference:.2f}; its time is slow)"


def completed(trials: pd.DataFrame, space: SearchSpace) -> pd.DataFrame:
    """The completed rows of ``trials`` (``analysis.frontier``'s definition)."""
    if trials.empty:
        return trials
    return trials[frontier(trials, space).completed.to_numpy()]


def _front_rows(f: Frontier) -> pd.DataFrame:
    """The frontier as the table the UIs show: ``acc`` is the metric the space selects on, ``test_acc``
    the test accuracy (the same numbers when the space selects on test)."""
    front = f.front
    return pd.DataFrame({
        "number": front["number"].astype(int), "budget": front["budget"], "algorithms": front["algorithms"],
        "is_baseline": front["is_baseline"].astype(bool), "n_seeds": front["n_seeds"], "acc": front[f.metric],
        "test_acc": front[ACCURACY] if ACCURACY in front else float("nan"),
        "train_seconds": front[TIME], "cost": front["cost"], "speedup": front["speedup"],
        "speedup_status": front["speedup_status"], "speedup_ci_low": front["speedup_ci_low"],
        "speedup_ci_high": front["speedup_ci_high"], "confirmed": front["confirmed"].astype(bool),
    }, columns=FRONT_COLUMNS)  # fmt: skip


def front_table(trials: pd.DataFrame, space: SearchSpace) -> pd.DataFrame:
    """Current Pareto front of the completed trials, by training time, with speedup over the baseline.

    One row per point (a recipe at a budget; accuracies and time are seed means over ``n_seeds``).
    Columns: FRONT_COLUMNS.
    """
    return _front_rows(frontier(trials, space))


def _selects_on_val(f: Frontier) -> bool:
    return f.metric == VAL_ACCURACY


def _held_out(test_acc: Any) -> str:
    """', test acc 0.9412 (held out)': the test figure after a trial chosen on validation."""
    text = _fmt(test_acc, ".4f")
    return f", test acc {text} (held out)" if text else ""


def _headline_text(f: Frontier) -> str | None:
    """The confirmed headline (``Headline.verdict``), or None while there is nothing to compare."""
    done = f.completed_trials
    if done.empty or not done["is_baseline"].any() or done["is_baseline"].all():
        return None
    text = f.headline.verdict
    if f.headline.confirmed and _selects_on_val(f):
        text += _held_out(f.recipe_test_accuracy(f.headline.number))
    return text


def headline(trials: pd.DataFrame, space: SearchSpace) -> str | None:
    """'confirmed: trial 12 (...) is 1.41x faster [95% CI 1.22-1.63] ...', 'nothing beat the baseline ...',
    or None before a baseline and a recipe have completed."""
    return _headline_text(frontier(trials, space))


def _fmt(x: Any, spec: str) -> str:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return ""
    return "" if math.isnan(x) else format(x, spec)


def _acc_columns(space: SearchSpace) -> list[tuple[str, str]]:
    """(front_table column, heading) of the accuracies shown: the one selected on, then test as held out."""
    if space.selection_column == VAL_ACCURACY:
        return [("acc", "val acc"), ("test_acc", "test acc (held out)")]
    return [("acc", "test acc")]


UNCONFIRMED_MARK = "†"  # an interval above 1 that is still not confirmed: the footnote under the table says why
UNCONFIRMED_NOTE = (f"{UNCONFIRMED_MARK} interval above 1 but not confirmed: too many bootstrap replicates measure "
                    "no speedup there (the baseline's shortest run already beats that accuracy, or the recipe falls "
                    "short)")


def _speedup_cell(r: pd.Series) -> str:
    """'1.41x', with its interval when the point has two or more seeds (one run bootstrapped measures no noise),
    a check mark when it is confirmed faster, and ``UNCONFIRMED_MARK`` when its interval clears 1 but it is not."""
    point = _fmt(r["speedup"], ".2f")
    if not point:
        return ""
    repeated = finite(r.get("n_seeds")) and float(r["n_seeds"]) >= 2
    if not repeated:
        return f"{point}x"
    interval = interval_text(r.get("speedup_ci_low"), r.get("speedup_ci_high"), label=False)
    if bool(r.get("confirmed", False)):
        return f"{point}x{interval} ✓"
    low = r.get("speedup_ci_low")
    return f"{point}x{interval}{' ' + UNCONFIRMED_MARK if finite(low) and float(low) > 1 else ''}"


def render_front(front: pd.DataFrame, space: SearchSpace, title: str) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    accs = _acc_columns(space)
    for name in ("trial", "budget", "algorithms", "seeds", *(h for _, h in accs), "train s",
                 *(["cost"] if "cost" in space.objectives else []), "speedup"):
        table.add_column(name, justify="left" if name == "algorithms" else "right")
    for _, r in front.head(MAX_FRONT_ROWS).iterrows():
        algs = "baseline" if r["is_baseline"] else (r["algorithms"] or "-")
        cells = [str(r["number"]), _fmt(r["budget"], "g"), algs, _fmt(r.get("n_seeds"), ".0f"),
                 *(_fmt(r[c], ".4f") for c, _ in accs), _fmt(r["train_seconds"], ".2f")]
        if "cost" in space.objectives:
            cells.append(_fmt(r["cost"], ".4g"))
        cells.append(_speedup_cell(r))
        table.add_row(*cells)
    if len(front) > MAX_FRONT_ROWS:
        table.caption = f"... and {len(front) - MAX_FRONT_ROWS} more on the front"
    return table


REPEAT = "REPEAT"  # a PRUNED trial that repeated a recipe: answered without training (engine/loop.py)


def _counts(trials: pd.DataFrame) -> dict[str, int]:
    """Trials per state; the PRUNED ones that repeated a recipe (never trained) apart, as REPEAT."""
    if trials.empty:
        return {}
    states = trials["state"].astype(str)
    if "duplicate_of" in trials:
        states = states.mask(trials["duplicate_of"].notna(), REPEAT)
    return {str(k): int(v) for k, v in states.value_counts().items()}


def _stopped_and_repeats(c: dict[str, int]) -> list[str]:
    return ([f"{c['PRUNED']} stopped at a rung"] if c.get("PRUNED") else []) + (
        [f"{c[REPEAT]} repeated proposals not trained"] if c.get(REPEAT) else [])


# 2) renderers ---------------------------------------------------------------------------------------


class LiveUI:
    """rich progress bar (done/total, elapsed, ETA) above a live table of the current Pareto front."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=False)
        self.live: Any = None
        self.space: SearchSpace | None = None
        self.running: set[int] = set()
        self.task: Any = None

    def start(self, *, space: SearchSpace, total: int, done: int, run_dir: Path, ray_address: str,
              resources: str = "") -> None:
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
                           f"{', '.join(space.objectives)}; run dir {run_dir}; Ray {ray_address}"
                           + (f"; {resources}" if resources else ""))
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
        parts += _stopped_and_repeats(c)
        return "  " + ", ".join(parts)

    def trial_started(self, number: int, attrs: dict[str, Any]) -> None:
        self.running.add(number)
        if self.live:
            self.progress.update(self.task, status=self._status())

    def trial_finished(self, row: dict[str, Any], trials: pd.DataFrame) -> None:
        self.running.discard(int(row["number"]))
        if row["state"] == "FAIL" and row.get("error") != INTERRUPTED:
            self.console.print(f"[yellow]trial {row['number']} failed:[/] {row.get('error')}")
        busy = busy_text(row, trials) if row["state"] == "COMPLETE" else ""
        if busy:
            self.console.print(f"[yellow]trial {row['number']}{busy}[/]")
        if not self.live or self.space is None:
            return
        self.progress.update(self.task, completed=count_finished_rows(trials), status=self._status(trials))
        self._front = render_front(front_table(trials, self.space), self.space, "Pareto front")
        self.live.update(self._renderable())

    def message(self, text: str) -> None:
        self.console.print(text)

    def set_total(self, total: int) -> None:
        """The confirmation stage adds its runs to the trials to wait for."""
        if self.live and self.task is not None:
            self.progress.update(self.task, total=total)

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
        self.selection_column = ACCURACY  # the accuracy the space selects on (SearchSpace.selection_column)

    def _line(self, text: str) -> None:
        print(f"[{time.monotonic() - self.t0:7.1f}s] {text}", file=self.stream, flush=True)

    def start(self, *, space: SearchSpace, total: int, done: int, run_dir: Path, ray_address: str,
              resources: str = "") -> None:
        self.total, self.selection_column = total, space.selection_column
        self._line(f"search {space.name}: {total} trials ({done} done), run dir {run_dir}, Ray {ray_address}"
                   + (f"; {resources}" if resources else ""))

    def trial_started(self, number: int, attrs: dict[str, Any]) -> None:
        tag = " baseline" if attrs.get("is_baseline") else ""
        self._line(f"trial {number} started: budget {attrs.get('budget')}{tag} "
                   f"{attrs.get('algorithms') or ''}".rstrip())

    def trial_finished(self, row: dict[str, Any], trials: pd.DataFrame) -> None:
        done = count_finished_rows(trials)
        if row["state"] == "COMPLETE":
            self._line(f"[{done}/{self.total}] trial {row['number']} COMPLETE {self._accuracies(row)} "
                       f"train {_fmt(row['train_seconds'], '.2f')} s budget {row['budget']} "
                       f"{row['algorithms'] or ''}".rstrip() + busy_text(row, trials))
        elif row["state"] == "PRUNED" and finite(row.get("duplicate_of")):
            self._line(f"[{done}/{self.total}] trial {row['number']} not trained: the same recipe as trial "
                       f"{int(row['duplicate_of'])}, budget {row['budget']} {row['algorithms'] or ''}".rstrip())
        elif row["state"] == "PRUNED":
            self._line(f"[{done}/{self.total}] trial {row['number']} PRUNED at rung {_fmt(row.get('pruned_at'), '.3g')}"
                       f" {self._accuracies(row)} train {_fmt(row['train_seconds'], '.2f')} s budget {row['budget']} "
                       f"{row['algorithms'] or ''}".rstrip())
        else:
            self._line(f"[{done}/{self.total}] trial {row['number']} {row['state']}: {row.get('error')}")

    def _accuracies(self, row: dict[str, Any]) -> str:
        if self.selection_column == VAL_ACCURACY:
            val, test = _fmt(row.get(VAL_ACCURACY), ".4f"), _fmt(row.get(ACCURACY), ".4f")
            return f"val acc {val} test acc {test} (held out)"
        return f"test acc {_fmt(row.get(ACCURACY), '.4f')}"

    def message(self, text: str) -> None:
        self._line(text)

    def set_total(self, total: int) -> None:
        self.total = total

    def stop(self) -> None:
        pass

    def summary(self, trials: pd.DataFrame, space: SearchSpace) -> None:
        from rich.console import Console

        _print_summary(Console(file=self.stream, width=120, no_color=True, highlight=False), trials, space)


def _print_summary(console: Any, trials: pd.DataFrame, space: SearchSpace) -> None:
    c = _counts(trials)
    console.print(f"done: {c.get('COMPLETE', 0)} completed, {c.get('FAIL', 0)} failed"
                  + "".join(f", {part}" for part in _stopped_and_repeats(c))
                  + (f" ({int((trials['error'] == INTERRUPTED).sum())} interrupted)"
                     if "error" in trials and (trials["error"] == INTERRUPTED).any() else ""))
    f = frontier(trials, space)  # once: the table and both headline lines read it
    front = _front_rows(f)
    if len(front):
        what = "seed means" if f.confirmed_front else "single runs: nothing confirmed yet"
        console.print(render_front(front, space, f"Pareto front ({len(front)} points, {what})"))
        if any(_speedup_cell(r).endswith(UNCONFIRMED_MARK) for _, r in front.iterrows()):
            console.print(UNCONFIRMED_NOTE)
    # the claim at the target first; a larger speedup at another accuracy only after it, labelled so
    paid = f.payback is not None and _headline_text(f)
    for line in (_headline_text(f), f.elsewhere_text(),
                 f.payback.text() if paid else "", f.payback.stages_text() if paid else ""):
        if line:
            console.print(line)
    if not _selects_on_val(f):  # last, so it is what the user reads before the numbers are reused
        console.print(f"warning: {TEST_SELECTION_WARNING}")


def make_ui(quiet: bool) -> SearchUI:
    """The live display on a terminal; log lines with --quiet or when stdout is a file or a pipe."""
    return LogUI() if quiet or not sys.stdout.isatty() else LiveUI()
