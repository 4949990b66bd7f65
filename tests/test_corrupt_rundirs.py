"""Run directories with missing or corrupt files, given to ``recipesearch report DIR``, ``recipesearch export DIR
--to OUT`` and ``recipesearch search SPACE --out DIR --resume``: issue 16's corpus of malformed inputs, the part
about run directories.

Every case starts from one valid finished run directory (a real search of a tiny space, run once per module
with a table lookup in place of training: space.yaml, study.db, run.json, trials.csv, pareto.csv, recipes/,
plots/, index.html), damages one file, and runs the three commands in-process. A refusal is exit code 2 with
exactly one line ``error: ...`` naming the damaged file (and its line / field where there is one), no
traceback, and nothing written or changed (every file's bytes and mtime, every folder's mtime; export creates
no --to). A resume is refused before Ray starts: the tests replace Ray by a stub that raises ``RayWouldStart``,
so a resume that gets that far was accepted with the run directory unchanged. Where the damage is harmless
the table says so (``OK``) and the test checks that the command did its job instead:

- report rebuilds its own outputs (index.html, pareto.csv, recipes/, plots/) from trials.csv, so their loss or
  damage is repaired; only a directory (or a non-folder where a folder goes) in their place blocks it.
- report and export check trials.csv against study.db first (report/reconcile.py): a trials.csv that is
  missing, damaged or disagrees with the study is rebuilt from it (``REBUILT``: exit 0, a note, the frontier of
  the undamaged run, every other input unchanged). A missing run.json: the selection is space.yaml's (a note);
  a damaged study.db is not used, and trials.csv is trusted.
- a resume rewrites trials.csv, run.json and the report from the study, so their loss or damage is harmless to
  it, except damage that would lose what it reads (run.json's sessions) or block a write (a directory in a
  file's place); study.db is the study itself: missing or damaged, the resume is refused rather than started
  on an empty study.

As root, a file without read permission is still readable: a symlink loop (ELOOP) stands for a file that
cannot be opened.
"""
from __future__ import annotations

import csv
import io
import json
import os
import random
import shutil
import sqlite3
import stat
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from recipesearch.cli import main

# 1) the valid run directory -------------------------------------------------------------------------

SPACE: dict[str, Any] = {  # 6 trials (2 budgets x 2 baseline seeds, 2 proposals) + 7 confirmation runs (4 of them
    # the paired baseline)
    "name": "corpus",
    "base": {"model": {"name": "cnn", "width": 8}, "data": {"name": "digits"},
             "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9, "weight_decay": 5.0e-4},
             "schedule": {"name": "cosine", "warmup_epochs": 0.2}, "max_duration": 2, "batch_size": 64,
             "device": "cpu"},
    "budgets": [0.5, 1], "trials": 6, "threads_per_trial": 1, "resources": {"cpus": 1},
    "sampler": {"name": "tpe", "seed": 0}, "hparams": {"optimizer.lr": {"scale": [0.5, 2]}},
    "algorithms": {"label_smoothing": {"smoothing": {"range": [0.05, 0.2]}}},
    "metric_split": "val", "baseline": {"seeds": 2}, "confirm": {"top_k": 1, "seeds": 2, "max_share": 0.6},
}  # fmt: skip


def table_lookup(proposal) -> dict[str, Any]:
    """Stands in for training: accuracy grows with the budget, label smoothing helps, the seed adds noise."""
    import math

    recipe = proposal.config["recipe"]
    budget, seed, ls = recipe["budget"], recipe["seed"], "label_smoothing" in recipe["algorithms"]
    acc = 0.85 + 0.05 * math.log2(budget * 2) + (0.02 if ls else 0.0) + 0.002 * ((seed * 7) % 3 - 1)
    secs = 4.0 * budget * (0.8 if ls else 1.0) * (1 + 0.01 * (seed % 3))
    return {"accuracy": acc - 0.03, "val_accuracy": acc, "train_seconds": secs, "loss": 0.1, "error": None}


class RayWouldStart(Exception):
    """Raised where the search would start Ray: everything before it accepted the run directory."""


class Template:
    def __init__(self, root: Path):
        self.root, self.space, self.run = root, root / "space.yaml", root / "run"
        self.pareto = (self.run / "pareto.csv").read_bytes()
        self.recipes = sorted(p.name for p in (self.run / "recipes").glob("*.yaml"))
        self.exported: list[str] = []
        # Every case runs in this one directory (emptied in between), so that cases whose damage leaves the
        # inputs as they were share one analysis and one set of plots (see ``memo``).
        self.case = root / "case"
        self.infos: dict[tuple, Any] = {}
        self.plots: dict[tuple, Any] = {}
        self.pages: dict[tuple, str] = {}
        self.loaded_space: Any = None


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Template:
    from recipesearch.engine.driver import SearchDriver
    from recipesearch.engine.executors import InProcess

    root = tmp_path_factory.mktemp("corpus")
    (root / "space.yaml").write_text(yaml.safe_dump(SPACE, sort_keys=False))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(SearchDriver, "_executor", lambda self: InProcess(table_lookup))
        code = main(["search", str(root / "space.yaml"), "--out", str(root / "run"), "--executor", "inprocess",
                     "--quiet"])
    assert code == 0
    t = Template(root)
    assert len(t.recipes) >= 2 and (t.run / PLOT).is_file()
    assert main(["export", str(t.run), "--to", str(root / "exported")]) == 0
    t.exported = sorted(p.name for p in (root / "exported").iterdir())
    assert t.exported
    return t


@pytest.fixture
def memo(template, monkeypatch):
    """Pure functions computed once per distinct input: the report's analysis (build_info: of what load_run
    read and the run directory's path), its plots (of the fields of ReportInfo they draw) and page, and the
    search space (the same file in every resume case), so a case whose damage the reading layer shrugs off
    costs a read, not a new analysis. The reading and the writing are what is under test here (the
    analysis, plots, page and space loading have tests of their own)."""
    import recipesearch.report as report_pkg
    import recipesearch.report.html as html_module
    import recipesearch.report.info as info_module
    import recipesearch.report.plots as plots_module
    import recipesearch.space as space_pkg

    build_info, render_plots, render_html = info_module.build_info, plots_module.render_plots, html_module.render_html
    load_space = space_pkg.load_space

    def cached_info(trials, run_meta=None, space_text="", run_dir=None):
        key = (trials.to_csv(), json.dumps(run_meta, sort_keys=True, default=str), space_text, str(run_dir))
        if key not in template.infos:
            template.infos[key] = build_info(trials, run_meta, space_text, run_dir=run_dir)
        return template.infos[key]

    def cached_plots(info):
        key = (info.trials.to_csv(), info.objectives, info.metric, info.space_name, info.selection)
        if key not in template.plots:
            template.plots[key] = render_plots(info)
        return template.plots[key]

    def cached_page(info, plots):
        key = (id(info), id(plots))
        if key not in template.pages:
            template.pages[key] = render_html(info, plots)
        return template.pages[key]

    def cached_space(path):
        if Path(path) != template.space:
            return load_space(path)
        if template.loaded_space is None:
            template.loaded_space = load_space(path)
        return template.loaded_space

    monkeypatch.setattr(info_module, "build_info", cached_info)
    monkeypatch.setattr(html_module, "render_html", cached_page)
    monkeypatch.setattr(space_pkg, "load_space", cached_space)
    monkeypatch.setattr(report_pkg, "build_info", cached_info)
    monkeypatch.setattr(plots_module, "render_plots", cached_plots)


@pytest.fixture
def no_ray(monkeypatch):
    """Ray replaced by a stub: a resume that gets as far as starting it raises RayWouldStart."""
    fake = types.ModuleType("recipesearch.engine.ray_tune")

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RayWouldStart

    fake.RayHandle = refuse  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "recipesearch.engine.ray_tune", fake)


# 2) damage ------------------------------------------------------------------------------------------


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    elif os.path.lexists(p):
        p.unlink()


def deleted(p: Path) -> None:
    _remove(p)


def empty(p: Path) -> None:
    p.write_bytes(b"")


def halfway(p: Path) -> None:
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])


def garbage(p: Path) -> None:
    p.write_bytes(random.Random(16).randbytes(3000))


def a_directory(p: Path) -> None:
    _remove(p)
    p.mkdir()
    (p / "inside.txt").write_text("a folder where a file goes\n")


def dangling_link(p: Path) -> None:
    _remove(p)
    p.symlink_to(p.parent / f"gone-{p.name}")


def link_loop(p: Path) -> None:
    _remove(p)
    p.symlink_to(p.name)  # points at itself: ELOOP, like a file nobody may open


def emptied_folder(p: Path) -> None:
    _remove(p)
    p.mkdir()


def a_file(p: Path) -> None:
    _remove(p)
    p.write_text("a file where a folder goes\n")


def text(content: str | bytes) -> Callable[[Path], None]:
    def write(p: Path) -> None:
        _remove(p)
        p.write_bytes(content.encode() if isinstance(content, str) else content)

    return write


def edit_json(change: Callable[[dict], Any]) -> Callable[[Path], None]:
    def edit(p: Path) -> None:
        data = json.loads(p.read_text())
        change(data)
        p.write_text(json.dumps(data, indent=2))

    return edit


def edit_csv(change: Callable[[list[list[str]]], Any], terminator: str = "\n") -> Callable[[Path], None]:
    """Edit trials.csv as rows of strings (row 0 the header; trial k is row k + 1, on line k + 2)."""

    def edit(p: Path) -> None:
        rows = list(csv.reader(io.StringIO(p.read_text(), newline="")))
        change(rows)
        out = io.StringIO()
        csv.writer(out, lineterminator=terminator).writerows(rows)
        p.write_text(out.getvalue(), newline="")

    return edit


def set_cell(trial: int, column: str, value: str) -> Callable[[list[list[str]]], None]:
    def change(rows: list[list[str]]) -> None:
        rows[trial + 1][rows[0].index(column)] = value

    return change


def drop_columns(*names: str) -> Callable[[list[list[str]]], None]:
    def change(rows: list[list[str]]) -> None:
        keep = [i for i, name in enumerate(rows[0]) if name not in names]
        rows[:] = [[row[i] for i in keep] for row in rows]

    return change


def edit_bytes(change: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def edit(p: Path) -> None:
        p.write_bytes(change(p.read_bytes()))

    return edit


def edit_db(*statements: str) -> Callable[[Path], None]:
    def edit(p: Path) -> None:
        con = sqlite3.connect(p)
        with con:
            for sql in statements:
                con.execute(sql)
        con.close()

    return edit


def hot_journal(p: Path) -> None:
    """study.db as a search killed in the middle of a write leaves it: pages half updated, and the rollback
    journal next to it that the next connection replays."""
    work = p.parent.parent / "killed"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    shutil.copy(p, work / p.name)
    con = sqlite3.connect(work / p.name, isolation_level=None)
    con.execute("PRAGMA cache_size = 1")  # spill the transaction's pages to the file before it commits
    con.execute("BEGIN")
    con.execute("UPDATE trial_user_attributes SET value_json = value_json || ' '")
    con.executemany("INSERT INTO trial_user_attributes (trial_id, key, value_json) VALUES (1, ?, 'null')",
                    [(f"pad{i}",) for i in range(2000)])
    assert (work / f"{p.name}-journal").is_file()
    shutil.copy(work / p.name, p)
    shutil.copy(work / f"{p.name}-journal", p.parent / f"{p.name}-journal")
    con.execute("ROLLBACK")
    con.close()


def new_db(*statements: str) -> Callable[[Path], None]:
    def write(p: Path) -> None:
        _remove(p)
        edit_db(*statements)(p)

    return write


# 3) the table ---------------------------------------------------------------------------------------
# One row per damage: (target, what it is, the damage, report, export, resume). An outcome is OK (the command
# succeeds, see the module docstring) or the words the one-line error must hold besides the damaged file's
# path; words starting with ":" must follow the path at the start of the message ("error: PATH:4: state: "),
# "|" separates words that must all be there; (words, target): the error names that other path instead.

OK = "ok"
REBUILT = "rebuilt"  # trials.csv rebuilt from study.db (report/reconcile.py): see the module docstring
RECIPE, PLOT = "recipes/<first>.yaml", "plots/pareto.svg"
GENERIC = [("deleted", deleted), ("empty", empty), ("truncated halfway", halfway), ("binary garbage", garbage),
           ("a directory", a_directory), ("a dangling symlink", dangling_link), ("a symlink loop", link_loop)]
NOT_TEXT = {"empty": "", "truncated halfway": "", "binary garbage": "not UTF-8", "a directory": ": a directory",
            "a dangling symlink": ": a broken symbolic link", "a symlink loop": ": a symbolic link that loops"}

Outcome = str | tuple[str, str]
CASES: list[tuple[str, str, Callable[[Path], None], Outcome, Outcome, Outcome]] = []

# space.yaml: shown by the report and named in exported recipes (a mapping is all they need); the resume
# compares it with SPACE. Missing: the report and export do without it, a resume has nothing to compare.
SPACE_WORDS = {"empty": ": not a search space", "truncated halfway": ":23: invalid YAML: could not find expected ':'",
               "binary garbage": "not UTF-8"}
for name, damage in GENERIC:
    words = SPACE_WORDS.get(name, NOT_TEXT.get(name, ""))
    resume = {"deleted": "has no space.yaml", "empty": "must be a YAML mapping",
              }.get(name, words)
    CASES.append(("space.yaml", name, damage, OK if name == "deleted" else words,
                  OK if name == "deleted" else words, resume))
CASES += [
    ("space.yaml", "a YAML list", text("- a\n- b\n"), ": not a search space", ": not a search space",
     ": a search space must be a YAML mapping"),
    ("space.yaml", "a number", text("42\n"), ": not a search space", ": not a search space", "YAML mapping"),
    ("space.yaml", "null", text("null\n"), ": not a search space", ": not a search space", "YAML mapping"),
    ("space.yaml", "invalid YAML", text("name: [corpus\nbudgets: 1\n"), "invalid YAML", "invalid YAML",
     "invalid YAML"),
    ("space.yaml", "a Latin-1 byte", text("name: caf\xe9\n".encode("latin-1")), ":1: not YAML text: byte 0xe9",
     ":1: not YAML text: byte 0xe9", ":1: not YAML text: byte 0xe9"),
    ("space.yaml", "YAML aliases", text("a: &x [1, 2]\nb: *x\n"), "aliases", "aliases", "aliases"),
    ("space.yaml", "a key twice", text("name: a\nname: b\n"), ":2: invalid YAML: duplicate key",
     ":2: invalid YAML: duplicate key", ":2: invalid YAML: duplicate key"),
    # another space: only a resume cares (it would continue another search's study)
    ("space.yaml", "another space", text(yaml.safe_dump({**SPACE, "budgets": [0.25, 1]}, sort_keys=False)), OK, OK,
     "space differs"),
    # the same space written differently: the same search (equal hashes)
    ("space.yaml", "the same space reformatted", text("# a comment\n" + json.dumps(SPACE)), OK, OK, OK),
]

# run.json: what the search recorded (objectives, the split it selected on, sessions). Missing: the defaults
# of an older run; damaged: refused rather than silently replaced by defaults (report) or by a new file that
# forgets the sessions so far (resume).
for name, damage in GENERIC:
    words = {"empty": ": empty file", "truncated halfway": "not valid JSON"}.get(name, NOT_TEXT.get(name, ""))
    CASES.append(("run.json", name, damage, OK if name == "deleted" else words, OK if name == "deleted" else words,
                  OK if name == "deleted" else words))
for name, content, words in [
    ("a JSON list", "[]", ": must hold a JSON object, not a list"),
    ("a number", "42", ": must hold a JSON object, not a number"),
    ("null", "null", ": must hold a JSON object, not null"),
    ("a string", '"finished"', ": must hold a JSON object, not a string"),
    ("not JSON", "{broken", ":1: not valid JSON"),
    ("a trailing comma", '{\n  "status": "finished",\n}', ":3: not valid JSON"),
    ("nested too deeply", "[" * 100_000, "nested too deeply"),
    ("a Latin-1 byte", '{"space_name": "caf\xe9"}'.encode("latin-1"), ":1: not JSON: byte 0xe9"),
]:
    CASES.append(("run.json", name, text(content), words, words, words))
for name, change, words in [
    ("metric_split a number", lambda d: d.update(metric_split=5), ": metric_split: must be 'test' or 'val'"),
    ("metric_split unknown", lambda d: d.update(metric_split="train"), ": metric_split: must be 'test' or 'val'"),
    ("objectives a string", lambda d: d.update(objectives="accuracy"), ": objectives: must be a list"),
    ("objectives unknown", lambda d: d.update(objectives=["accuracy", "speed"]), ": objectives: must be a list"),
    ("objectives nothing to maximize", lambda d: d.update(objectives=["train_seconds"]), ": objectives: "),
    ("directions wrong", lambda d: d.update(directions=["up", "down"]), ": directions: must be a list"),
    ("hardware a string", lambda d: d.update(hardware="fast"), ": hardware: must be an object"),
    ("versions a list", lambda d: d.update(versions=["3.11"]), ": versions: must be an object"),
    ("sessions an object", lambda d: d.update(sessions={}), ": sessions: must be a list of objects"),
    ("sessions of strings", lambda d: d.update(sessions=["one"]), ": sessions: must be a list of objects"),
    ("command a string", lambda d: d.update(command="recipesearch search"), ": command: must be a list"),
    ("status a number", lambda d: d.update(status=3), ": status: must be text"),
    ("start_time a list", lambda d: d.update(start_time=[2025]), ": start_time: must be text"),
]:
    CASES.append(("run.json", name, edit_json(change), words, words, words))
CASES += [  # keys an older run.json lacks, and ones a newer one may add: harmless
    ("run.json", "no metric_split", edit_json(lambda d: d.pop("metric_split")), OK, OK, OK),
    ("run.json", "no objectives", edit_json(lambda d: (d.pop("objectives"), d.pop("directions"))), OK, OK, OK),
    ("run.json", "no sessions", edit_json(lambda d: d.pop("sessions")), OK, OK, OK),
    ("run.json", "an unknown key", edit_json(lambda d: d.update(comment="by hand")), OK, OK, OK),
    ("run.json", "an empty object", text("{}"), OK, OK, OK),
    # the search kept its study on a server: the report does not need it, a resume needs --storage again
    ("run.json", "storage on a server", edit_json(lambda d: d.update(storage="postgresql://u:***@db/x")), OK, OK,
     ("--storage", ".")),  # named: the run directory (its run.json says where the study is)
]

# trials.csv: what the report and export read; a resume rewrites it from the study (except a directory there).
for name, damage in GENERIC:
    words = {"deleted": "no trials.csv", "empty": ": empty file",
             "truncated halfway": "fields where the header has"}.get(name, NOT_TEXT.get(name, ""))
    CASES.append(("trials.csv", name, damage, REBUILT, REBUILT, words if name == "a directory" else OK))
for name, damage, words in [
    ("no accuracy column", edit_csv(drop_columns("accuracy")), ":1: missing column accuracy "),
    ("no number column", edit_csv(drop_columns("number")), ":1: missing column number "),
    ("no val_accuracy, the metric run.json selects on", edit_csv(drop_columns("val_accuracy")),
     ":1: missing column val_accuracy "),
    ("no state and no budget", edit_csv(drop_columns("state", "budget")), ":1: missing columns state, budget "),
    ("a column twice", edit_csv(lambda r: [row.append(row[r[0].index("accuracy")]) for row in r]),
     ":1: column 'accuracy' appears twice"),
    ("separated by semicolons", edit_csv(lambda r: r.__setitem__(slice(None), [[";".join(x)] for x in r])),
     ":1: missing columns"),
    ("accuracy not a number", edit_csv(set_cell(2, "accuracy", "abc")), ":4: accuracy: 'abc' is not a number"),
    ("train_seconds not a number", edit_csv(set_cell(0, "train_seconds", "2 s")),
     ":2: train_seconds: '2 s' is not a number"),
    ("budget not a number", edit_csv(set_cell(5, "budget", "half")), ":7: budget: 'half' is not a number"),
    ("seed not a number", edit_csv(set_cell(1, "seed", "[1]")), ":3: seed: '[1]' is not a number"),
    ("number not an integer", edit_csv(set_cell(3, "number", "3.5")), ":5: number: '3.5' is not a trial number"),
    ("number negative", edit_csv(set_cell(3, "number", "-3")), ":5: number: '-3' is not a trial number"),
    ("number text", edit_csv(set_cell(3, "number", "three")), ":5: number: 'three' is not a trial number"),
    ("number empty", edit_csv(set_cell(3, "number", "")), ":5: number: '' is not a trial number"),
    ("a trial number twice", edit_csv(set_cell(4, "number", "1")), ":6: number: '1' is given twice (line 3"),
    ("an unknown state", edit_csv(set_cell(1, "state", "DONE")), ":3: state: 'DONE' is not a trial state"),
    ("an empty state", edit_csv(set_cell(1, "state", "")), ":3: state: '' is not a trial state"),
    ("is_baseline not a boolean", edit_csv(set_cell(0, "is_baseline", "maybe")),
     ":2: is_baseline: 'maybe' is not True or False"),
    ("an unknown stage", edit_csv(set_cell(6, "stage", "warmup")), ":8: stage: 'warmup' is not a stage"),
    ("recipe_json not JSON", edit_csv(set_cell(2, "recipe_json", "{model: cnn")),
     ":4: recipe_json: '{model: cnn' is not valid JSON"),
    ("recipe_json a list", edit_csv(set_cell(2, "recipe_json", "[1, 2]")),
     ":4: recipe_json: '[1, 2]' is not a JSON object"),
    ("a row with a field more", edit_csv(lambda r: r[3].append("x")), ":4: |fields where the header has"),
    ("a row with a field less", edit_csv(lambda r: r[3].pop()), ":4: |fields where the header has"),
    ("a row of one field", edit_csv(lambda r: r.append(["9"])), ":11: 1 field where the header has"),
    ("a NUL byte", edit_bytes(lambda b: b.replace(b"COMPLETE", b"COMP\x00LETE", 3)),
     ":2: not a readable CSV file: it holds NUL bytes"),
    ("a Latin-1 byte", edit_bytes(lambda b: b.replace(b"cnn", b"cnn\xe9", 2)),
     ":2: not a readable CSV file: byte 0xe9 is not UTF-8"),
]:
    CASES.append(("trials.csv", name, damage, REBUILT, REBUILT, OK))
    del words  # what read_trials says of this damage (tests/test_rundir.py): study.db mends it here
CASES += [
    # cut to its header (issue 32: it used to report "0 completed trials" and delete every recipe file)
    ("trials.csv", "header only", edit_csv(lambda r: r.__delitem__(slice(1, None))), REBUILT, REBUILT, OK),
    # a baseline row gone (issue 32: pareto.csv was silently rewritten with other speedups)
    ("trials.csv", "a baseline row deleted", edit_csv(lambda r: r.__delitem__(1)), REBUILT, REBUILT, OK),
    ("trials.csv", "an accuracy edited", edit_csv(set_cell(2, "val_accuracy", "0.99")), REBUILT, REBUILT, OK),
]
CASES += [  # harmless: what a spreadsheet round trip or a careful hand edit leaves
    ("trials.csv", "a UTF-8 BOM", edit_bytes(lambda b: b"\xef\xbb\xbf" + b), OK, OK, OK),
    ("trials.csv", "CRLF line ends", edit_csv(lambda r: None, terminator="\r\n"), OK, OK, OK),
    ("trials.csv", "rows in another order", edit_csv(lambda r: r.__setitem__(slice(1, None), r[:0:-1])), OK, OK, OK),
    ("trials.csv", "an extra column", edit_csv(lambda r: [row.append("note") for row in r]), OK, OK, OK),
    ("trials.csv", "a blank line at the end", edit_bytes(lambda b: b + b"\n"), OK, OK, OK),
]

# study.db: the study, read only by a resume; it must be the SQLite study of this space, in one piece.
for name, damage in GENERIC:
    words = {"deleted": ": not found", "empty": ": not an SQLite database (empty file)",
             "truncated halfway": ": a damaged SQLite database", "binary garbage": ": not an SQLite database",
             }.get(name, NOT_TEXT.get(name, ""))
    CASES.append(("study.db", name, damage, OK, OK, words))
CASES += [
    ("study.db", "SQLite without Optuna's tables", new_db("CREATE TABLE notes (text TEXT)"), OK, OK,
     ": an SQLite database without Optuna's tables"),
    ("study.db", "an empty SQLite database", new_db("PRAGMA user_version = 1"), OK, OK,
     ": an SQLite database without Optuna's tables"),
    ("study.db", "the trials table dropped", edit_db("DROP TABLE trials"), OK, OK, "without Optuna's tables"),
    ("study.db", "a study of another name", edit_db("UPDATE studies SET study_name = 'other'"), OK, OK,
     ": no study named 'corpus' (it holds 'other')"),
    ("study.db", "no study at all", edit_db("DELETE FROM study_directions", "DELETE FROM studies"), OK, OK,
     ": no study named 'corpus' (it holds no study)"),
    ("study.db", "other directions", edit_db("UPDATE study_directions SET direction = 'MINIMIZE'"), OK, OK,
     ": the study 'corpus' has directions ['minimize', 'minimize']"),
    # a kill -9 in the middle of a write: read-only, the journal cannot be replayed; the resume's Optuna does
    ("study.db", "a hot journal (killed mid-write)", hot_journal, OK, OK, OK),
    ("study.db", "an SQLite header, then garbage",
     text(b"SQLite format 3\x00" + random.Random(3).randbytes(8192)), OK, OK, ": a damaged SQLite database"),
]

# The report's own outputs: rebuilt by report (and by a resume's final report), never read by export.
for target in ("index.html", "pareto.csv", RECIPE, PLOT):
    for name, damage in GENERIC:
        blocked = ": a directory where a file goes"
        CASES.append((target, name, damage, blocked if name == "a directory" else OK, OK,
                      blocked if name == "a directory" else OK))
for target in ("recipes", "plots"):
    for name, damage in [("deleted", deleted), ("emptied", emptied_folder), ("a file", a_file),
                         ("a dangling symlink", dangling_link), ("a symlink loop", link_loop)]:
        words = {"a file": ": a file where a folder goes", "a dangling symlink": ": a broken symbolic link where",
                 "a symlink loop": ": a symbolic link that loops where"}.get(name, OK)
        CASES.append((target, name, damage, words, OK, words))

# The run directory itself.
CASES += [
    # --resume on nothing to continue is one line (issue 32: it used to start a new search)
    (".", "missing", deleted, "no such run directory", "no such run directory", "does not exist: there is no search"),
    (".", "a file", a_file, ": not a directory", ": not a directory", "exists and is not a directory"),
    (".", "empty", emptied_folder, "no trials.csv", "no trials.csv", "is empty: there is no search to continue"),
    (".", "only space.yaml (killed as it started)",
     lambda p: [_remove(c) for c in p.iterdir() if c.name != "space.yaml"], "no trials.csv", "no trials.csv", OK),
    (".", "no run.json, no trials.csv (killed before its first trial)",
     lambda p: [_remove(c) for c in p.iterdir() if c.name not in ("space.yaml", "study.db")], REBUILT, REBUILT, OK),
    (".", "no run.json, no space.yaml, no study.db", lambda p: [_remove(c) for c in p.iterdir()
                                                               if c.name in ("space.yaml", "study.db", "run.json")],
     ("which split the search selected on is unknown", "run.json"),
     ("which split the search selected on is unknown", "run.json"), "has no space.yaml"),
]

COMMANDS = ("report", "export", "resume")
PARAMS = [pytest.param(command, target, damage, outcome, id=f"{command}-{target}-{name}")
          for target, name, damage, *outcomes in CASES for command, outcome in zip(COMMANDS, outcomes, strict=True)]
OUTPUTS = ("index.html", "pareto.csv", "recipes", "plots")  # what a report writes


def test_the_corpus_is_large_enough():
    assert len(PARAMS) >= 160 and len({p.id for p in PARAMS}) == len(PARAMS)


# 4) running one case --------------------------------------------------------------------------------


def snapshot(root: Path) -> dict[str, Any]:
    """Every entry under ``root`` (links not followed): a file's bytes and mtime, a folder's mtime, a link's target."""
    if not os.path.lexists(root):
        return {}
    out: dict[str, Any] = {}
    entries = [root]
    if root.is_dir() and not root.is_symlink():
        for folder, dirs, files in os.walk(root):
            entries += [Path(folder) / n for n in dirs + files]
    for p in entries:
        st = p.lstat()
        key = str(p.relative_to(root))
        if stat.S_ISLNK(st.st_mode):
            out[key] = ("link", os.readlink(p))
        elif stat.S_ISDIR(st.st_mode):
            out[key] = ("dir", st.st_mtime_ns)
        else:
            out[key] = ("file", p.read_bytes(), st.st_mtime_ns)
    return out


def resolve(run: Path, target: str) -> Path:
    if target == RECIPE:
        return run / "recipes" / sorted(p.name for p in (run / "recipes").glob("*.yaml"))[0]
    return run if target == "." else run / target


def run_command(command: str, run: Path, template: Template, exported: Path, capsys) -> tuple[Any, str, str]:
    args = {"report": ["report", str(run)], "export": ["export", str(run), "--to", str(exported)],
            "resume": ["search", str(template.space), "--out", str(run), "--resume", "--quiet"]}[command]
    try:
        code = main(args)
    except SystemExit as exc:
        code = exc.code
    except RayWouldStart:
        code = "ray"
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("command,target,damage,outcome", PARAMS)
def test_a_damaged_run_directory(template, tmp_path, capsys, memo, no_ray, command, target, damage, outcome):
    shutil.rmtree(template.case, ignore_errors=True)
    run, exported = template.case / "run", tmp_path / "exported"
    shutil.copytree(template.run, run, symlinks=True)
    path = resolve(run, target)
    damage(path)
    pristine_inputs = target in (*OUTPUTS, RECIPE, PLOT, "study.db")
    before = snapshot(run)
    code, out, err = run_command(command, run, template, exported, capsys)

    if outcome not in (OK, REBUILT):
        words, named = outcome if isinstance(outcome, tuple) else (outcome, None)
        named = resolve(run, named) if named else path
        assert code == 2, f"exit {code}\n{out}{err}"
        assert out == "" and err.startswith("error: ") and err.count("\n") == 1, out + err
        assert "Traceback" not in err and str(named) in err, err
        for part in words.split("|"):
            assert err.startswith(f"error: {named}{part}") if part.startswith(":") else part in err, err
        assert snapshot(run) == before, "a refused command changed the run directory"
        assert not os.path.lexists(exported)
        return

    assert "Traceback" not in out + err and "error" not in err, out + err
    if outcome == REBUILT:
        assert code == 0 and "note: trials.csv" in out and "from study.db" in out, out + err
        if command == "export":
            assert sorted(p.name for p in exported.iterdir()) == template.exported
        else:
            assert (run / "pareto.csv").read_bytes() == template.pareto
        kept = {k: v for k, v in before.items() if k.split("/")[0] not in (*OUTPUTS, ".", "trials.csv")}
        assert {k: v for k, v in snapshot(run).items() if k in kept} == kept, "changed an input besides trials.csv"
        return
    if command == "resume":
        assert code == "ray", f"exit {code}\n{out}{err}"  # accepted: it went on to start Ray
        assert snapshot(run) == before
    elif command == "export":
        assert code == 0, out + err
        names = sorted(p.name for p in exported.iterdir())
        assert names and all(n.endswith(".yaml") for n in names)
        if target not in ("run.json", "space.yaml"):  # the frontier does not depend on the damage
            assert names == template.exported
        assert snapshot(run) == before
    else:
        assert code == 0 and err == "", out + err
        assert (run / "index.html").read_text().rstrip().endswith("</html>")
        after = snapshot(run)
        kept = {k: v for k, v in before.items() if k.split("/")[0] not in (*OUTPUTS, ".")}  # "." gets new files
        assert {k: v for k, v in after.items() if k in kept} == kept, "the report changed one of its inputs"
        if pristine_inputs:  # repaired: the same frontier and recipe files as the valid run's
            assert (run / "pareto.csv").read_bytes() == template.pareto
            assert sorted(p.name for p in (run / "recipes").glob("*.yaml")) == template.recipes


# 5) harmless damage, repaired for real ------------------------------------------------------------


def test_a_resume_rewrites_a_damaged_trials_csv_from_the_study(template, tmp_path, capsys, monkeypatch):
    """The resume the table accepts, run for real in-process (every trial is done: nothing trains): trials.csv
    comes back as it was, from the study."""
    from recipesearch.engine.driver import SearchDriver
    from recipesearch.engine.executors import InProcess

    run = Path(shutil.copytree(template.run, tmp_path / "run"))
    garbage(run / "trials.csv")
    monkeypatch.setattr(SearchDriver, "_executor", lambda self: InProcess(table_lookup))
    code = main(["search", str(template.space), "--out", str(run), "--resume", "--executor", "inprocess", "--quiet",
                 "--no-report"])
    assert code == 0, capsys.readouterr()
    assert (run / "trials.csv").read_bytes() == (template.run / "trials.csv").read_bytes()
    assert len(json.loads((run / "run.json").read_text())["sessions"]) == 2
