"""README.md and docs/*.md against the code: every ``recipesearch ...`` command they show parses with the real
command-line parser, every Python snippet compiles, and the README stays short with its Quick start up top.

A command is a line of a fenced shell block (``bash``, ``sh``, ``console``, ``text`` or no language) or an inline
code span that starts with ``recipesearch`` (after an optional ``$ ``, ``.venv/bin/`` or ``python -m``). Line
continuations are joined, trailing ``# comments`` and the shell pieces after ``|``, ``&&``, ``;`` or ``>`` are
cut off. An inline span of the command alone or with only its subcommand (``recipesearch train`` in prose) names
the command: its subcommand must exist, but its required arguments are not asked for. Nothing is run or trained.
"""
from __future__ import annotations

import contextlib
import functools
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from recipesearch.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# docs/ARCHITECTURE.md is generated from the code (tools/architecture.py) and checked by its own test.
DOCS = sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "ARCHITECTURE.md")
PAGES = [README, *DOCS]
MAX_README_LINES = 200
QUICK_START_WITHIN = 25

SHELL_LANGUAGES = {"", "bash", "sh", "shell", "console", "text", "shell-session"}
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")
SHELL_OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1"}
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Command:
    """One command as written in a page: where it is, its text, and whether it stands in a code block."""

    path: Path
    line: int
    text: str
    inline: bool

    @property
    def where(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language, the line of its first content line, its text."""

    language: str
    line: int
    text: str


def fenced_blocks(text: str) -> tuple[list[Block], list[tuple[int, str]]]:
    """(the fenced blocks, the other lines as (line number, text)) of a Markdown page."""
    blocks: list[Block] = []
    prose: list[tuple[int, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            prose.append((i + 1, lines[i]))
            i += 1
            continue
        fence, language = match.group(2), match.group(3).lower()
        start = i + 1
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            i += 1
        blocks.append(Block(language, start + 1, "\n".join(lines[start:i])))
        i += 1  # the closing fence
    return blocks, prose


def _joined(block: Block) -> list[tuple[int, str]]:
    """The block's lines with backslash continuations joined, each with the line number it starts on."""
    out: list[tuple[int, str]] = []
    pending, first = "", 0
    for offset, raw in enumerate(block.text.splitlines()):
        if not pending:
            first = block.line + offset
        piece = raw.strip() if pending else raw
        if piece.rstrip().endswith("\\"):
            pending += piece.rstrip()[:-1].rstrip() + " "
            continue
        out.append((first, pending + piece))
        pending = ""
    if pending:
        out.append((first, pending))
    return out


def commands_in(path: Path, text: str | None = None) -> list[Command]:
    """Every ``recipesearch`` command line of a page, in fenced shell blocks and in inline code spans."""
    text = path.read_text() if text is None else text
    blocks, prose = fenced_blocks(text)
    found: list[Command] = []
    for block in blocks:
        if block.language not in SHELL_LANGUAGES:
            continue
        for line, source in _joined(block):
            stripped = source.strip()
            if stripped.startswith("$ "):
                stripped = stripped[2:]
            if _tokens(stripped) is not None:
                found.append(Command(path, line, stripped, inline=False))
    # Inline spans: the prose's lines joined (a span may wrap onto the next line), never across a blank line.
    joined = "\n".join(source for _, source in prose)
    numbers = [number for number, _ in prose]
    for match in re.finditer(r"(?<!`)`([^`]+)`(?!`)", joined):
        span = match.group(1)
        if "\n\n" in span:
            continue
        span = " ".join(span.split())
        if _tokens(span):  # not ``recipesearch`` alone: the program's name in prose
            line = numbers[joined.count("\n", 0, match.start())]
            found.append(Command(path, line, span, inline=True))
    return sorted(found, key=lambda c: c.line)


def _tokens(text: str) -> list[str] | None:
    """The arguments after ``recipesearch`` of a shell line, or None when the line is no recipesearch command."""
    if "recipesearch" not in text:
        return None
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        words = list(lexer)
    except ValueError:  # an unclosed quote: not a shell line
        return None
    while words and ENV_ASSIGNMENT.match(words[0]):
        words.pop(0)
    if words and words[0] == "$":
        words.pop(0)
    if len(words) >= 3 and Path(words[0]).name.startswith("python") and words[1:3] == ["-m", "recipesearch"]:
        words = ["recipesearch", *words[3:]]
    if not words or Path(words[0]).name != "recipesearch" or words[0].startswith("recipesearch/"):
        return None
    argv: list[str] = []
    for word in words[1:]:
        if word in SHELL_OPERATORS or set(word) <= set(";&|<>"):
            break
        argv.append(word)
    return argv


@functools.lru_cache(maxsize=1)
def _parser():
    return build_parser()


def _subcommands() -> set[str]:
    for action in _parser()._actions:
        if action.dest == "command" and action.choices:
            return set(action.choices)
    raise AssertionError("recipesearch's parser has no subcommands")


def problem(command: Command) -> str | None:
    """Why the real parser refuses the command (its error line), or None when it parses."""
    argv = _tokens(command.text)
    assert argv is not None
    if command.inline and len(argv) <= 1 and not any(a.startswith("-") for a in argv):
        # ``recipesearch`` or ``recipesearch train`` in prose names the command: the subcommand must exist.
        if argv and argv[0] not in _subcommands():
            return f"no such command {argv[0]!r} (commands: {', '.join(sorted(_subcommands()))})"
        return None
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            _parser().parse_args(argv)
    except SystemExit as exc:
        if exc.code not in (0, None):  # --help and --version exit 0
            return err.getvalue().strip() or f"exit {exc.code}"
    return None


ALL_COMMANDS = [c for page in PAGES for c in commands_in(page)]


def test_the_pages_show_commands() -> None:
    """The extraction finds what the pages hold: the README's own commands, and some in every guide's folder."""
    in_readme = [c for c in ALL_COMMANDS if c.path == README]
    assert len(in_readme) >= 10, [c.text for c in in_readme]
    assert any(c.text.startswith("recipesearch search") for c in in_readme)
    assert len(ALL_COMMANDS) > len(in_readme)


@pytest.mark.parametrize("command", ALL_COMMANDS,
                         ids=[f"{c.where} {' '.join(['recipesearch', *(_tokens(c.text) or [])])[:70]}"
                              for c in ALL_COMMANDS])
def test_every_command_parses(command: Command) -> None:
    why = problem(command)
    assert why is None, f"{command.where}: `{command.text}` does not parse: {why}"


def test_a_flag_that_does_not_exist_is_reported(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n\n"
        "Run `recipesearch search digits --out runs/d --no-such-flag 3` to see.\n\n"
        "```bash\n"
        "$ .venv/bin/recipesearch search digits \\\n"
        "    --out runs/digits --trails 20   # a typo of --trials\n"
        "recipesearch report runs/digits | tail -3\n"
        "python -m recipesearch export runs/digits --to out/ && echo done\n"
        "recipesearch train\n"
        "```\n\n"
        "The `recipesearch` command, `recipesearch train` in prose and `recipesearch trian` (a typo).\n")
    found = commands_in(page)
    assert [(c.line, c.inline) for c in found] == [
        (3, True), (6, False), (8, False), (9, False), (10, False), (13, True), (13, True)]
    assert [c.text for c in found if c.inline] == [
        "recipesearch search digits --out runs/d --no-such-flag 3", "recipesearch train", "recipesearch trian"]
    bad = {c.line: problem(c) for c in found if problem(c)}
    assert set(bad) == {3, 6, 10, 13}, bad
    assert "--no-such-flag" in bad[3] and "--trails" in bad[6]
    assert "required" in bad[10]  # a bare subcommand in a code block must be a whole command
    assert "trian" in bad[13]
    # the message a failing page gets names the file, the line and the command
    named = r"page\.md:6: `\.venv/bin/recipesearch search digits --out runs/digits --trails 20"
    with pytest.raises(AssertionError, match=named):
        test_every_command_parses(next(c for c in found if c.line == 6))


def test_a_renamed_flag_fails_a_real_page() -> None:
    """A README command with one of its flags renamed is refused: the check is live."""
    command = next(c for c in ALL_COMMANDS if c.path == README and " --seeds " in c.text)
    assert problem(command) is None
    renamed = Command(command.path, command.line, command.text.replace(" --seeds ", " --fresh-seeds "), command.inline)
    why = problem(renamed)
    assert why is not None and "--fresh-seeds" in why, why


def test_not_a_command() -> None:
    assert _tokens("pip install recipesearch[postgres]") is None
    assert _tokens("recipesearch/analysis/sequential.py") is None
    assert _tokens("recipesearch.apply(recipe, model)") is None
    assert _tokens("make demo   # sets up recipesearch") is None
    assert _tokens("RECIPESEARCH_CACHE=/tmp/c recipesearch train digits_baseline > log.txt") == [
        "train", "digits_baseline"]


def python_blocks() -> list[tuple[Path, Block]]:
    return [(page, block) for page in PAGES for block in fenced_blocks(page.read_text())[0]
            if block.language in ("python", "py")]


@pytest.mark.parametrize("page, block", python_blocks(),
                         ids=[f"{p.relative_to(ROOT)}:{b.line}" for p, b in python_blocks()])
def test_every_python_snippet_compiles(page: Path, block: Block) -> None:
    compile(block.text, f"{page.relative_to(ROOT)}:{block.line}", "exec")


def test_the_readme_is_short_with_the_quick_start_first() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines (at most {MAX_README_LINES})"
    headings = [i + 1 for i, line in enumerate(lines) if re.match(r"#+\s*Quick start", line, re.IGNORECASE)]
    assert headings and headings[0] <= QUICK_START_WITHIN, f"the Quick start heading is at {headings or 'no line'}"


def test_the_readme_links_every_guide() -> None:
    text = README.read_text()
    missing = [p.name for p in DOCS if f"docs/{p.name}" not in text]
    assert missing == [], f"README.md's guide list lacks {missing}"


def test_relative_links_resolve() -> None:
    """A link to a file of the repository (not http, not an anchor alone) points at something that exists."""
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            if not (page.parent / target.split("#", 1)[0]).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == [], broken
