"""The corpus of damaged run directories and concurrent commands (§7's last table): how many cases, what each
command does with them, and whether every case's test passes now.

The cases are the test suite's (tests/test_corrupt_rundirs.py: one damage of one file of a finished run
directory, given to `report`, `export` and `search --resume`; tests/engine/test_one_driver.py and
tests/test_runlock.py: a second driver beside a running search; tests/test_cli_failures.py and
tests/test_resume_and_executor_checks.py: the CLI's other refusals), each asserting what is on disk
afterwards. This module counts them from the tables the tests are made of and runs the tests, so the numbers
are the suite's own. `python -m bench.damage_corpus` runs it alone and merges it into crash_cycles.json.
"""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import time
from collections import Counter
from typing import Any

from bench.common import ROOT, load_result, md_table, save_result

CORPUS = ROOT / "tests" / "test_corrupt_rundirs.py"
TEST_FILES = ("tests/test_corrupt_rundirs.py", "tests/engine/test_one_driver.py", "tests/test_runlock.py",
              "tests/test_cli_failures.py", "tests/test_resume_and_executor_checks.py")


def _corpus_table() -> tuple[list[tuple], tuple[str, ...], str, str]:
    spec = importlib.util.spec_from_file_location("corrupt_rundirs_table", CORPUS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CASES, module.COMMANDS, module.OK, module.REBUILT


def outcome_counts() -> dict[str, Any]:
    """Per command: cases refused in one line, done as asked, or done after rebuilding trials.csv."""
    cases, commands, ok, rebuilt = _corpus_table()
    by_command: dict[str, Counter] = {c: Counter() for c in commands}
    targets = Counter(case[0] for case in cases)
    for _target, _name, _damage, *outcomes in cases:
        for command, outcome in zip(commands, outcomes, strict=True):
            kind = "done" if outcome == ok else "rebuilt from study.db" if outcome == rebuilt else "refused"
            by_command[command][kind] += 1
    return {"cases": len(cases), "checks": len(cases) * len(commands), "targets": dict(targets),
            "by_command": {c: dict(v) for c, v in by_command.items()}}


def run_tests() -> dict[str, Any]:
    files = [f for f in TEST_FILES if (ROOT / f).is_file()]
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider", *files],
                       cwd=ROOT, capture_output=True, text=True, timeout=1800)
    last = (r.stdout.strip().splitlines() or [""])[-1]
    counts = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|failed|errors?|skipped)", last)}
    return {"files": files, "passed": counts.get("passed", 0), "failed": counts.get("failed", 0),
            "errors": counts.get("error", 0) + counts.get("errors", 0), "returncode": r.returncode,
            "summary": last, "seconds": round(time.perf_counter() - t0, 1)}


def run_corpus() -> dict[str, Any]:
    return {**outcome_counts(), "tests": run_tests()}


def command_rows(corpus: dict[str, Any]) -> list[list[Any]]:
    """Per command: its cases refused, done as asked, and done after rebuilding trials.csv from study.db."""
    return [[command, c.get("refused", 0), c.get("done", 0), c.get("rebuilt from study.db", 0)]
            for command, c in corpus["by_command"].items()]


def all_hold(tests: dict[str, Any]) -> bool:
    """Whether every test of the corpus passed (nothing failed or errored, pytest exited 0)."""
    return tests["failed"] == 0 and tests["errors"] == 0 and tests["returncode"] == 0


def render_corpus(corpus: dict[str, Any]) -> str:
    tests = corpus["tests"]
    targets = ", ".join(f"{t} {n}" for t, n in sorted(corpus["targets"].items(), key=lambda kv: -kv[1]))
    return "\n".join([
        "### Damaged run directories and concurrent commands",
        "",
        f"{corpus['cases']} damages of a finished run directory ({targets}), each given to `report`, `export` and "
        f"`search --resume`: {corpus['checks']} checks, each asserting every file's bytes and mtime afterwards "
        "(tests/test_corrupt_rundirs.py). A refusal is one line, exit 2, nothing changed; where trials.csv is "
        "missing, damaged or disagrees with study.db it is rebuilt from the study and a note says so.",
        "",
        md_table(["command", "refused (one line, exit 2, nothing changed)", "done",
                  "done, trials.csv rebuilt from study.db"], command_rows(corpus)),
        "",
        f"With the concurrent-command and CLI-refusal tests ({', '.join(f'`{f}`' for f in tests['files'][1:])}): "
        f"**{tests['passed']} passed, {tests['failed']} failed** ({tests['seconds']:.0f} s). "
        + ("All hold." if all_hold(tests) else f"Not all hold: {tests['summary']}"),
    ])


def main() -> None:
    from bench import crash_cycles, run_all

    result = load_result(crash_cycles.NAME) or {}
    result["corpus"] = run_corpus()
    save_result(crash_cycles.NAME, result)
    (run_all.REPORTS / "benchmarks.md").write_text(run_all.render_markdown())
    print(render_corpus(result["corpus"]))


if __name__ == "__main__":
    main()
