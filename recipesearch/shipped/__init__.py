"""The search spaces and recipes that ship inside the package (a wheel carries them; in a clone the top-level
``search_spaces/`` and ``recipes/`` are links to these folders): found by name (``recipesearch search digits``,
``recipesearch train digits_baseline``) and listed by ``recipesearch spaces`` / ``recipesearch recipes``."""
from __future__ import annotations

import itertools
import re
from pathlib import Path

from recipesearch.errors import UserError

FOLDERS = {"space": Path(__file__).parent / "spaces", "recipe": Path(__file__).parent / "recipes"}


def names(kind: str) -> list[str]:
    """The shipped files of ``kind`` ("space" or "recipe") by name, sorted."""
    return sorted(p.stem for p in FOLDERS[kind].glob("*.yaml"))


def resolve(path: str | Path, kind: str) -> str | Path:
    """``path`` as given when it is a file, or looks like a path (a folder or a suffix in it: its reader says
    what is wrong); else the shipped file of that name. A bare name that ships nothing is one line naming them."""
    text = str(path)
    if Path(text).exists() or "/" in text or "\\" in text or Path(text).suffix:
        return path
    shipped = FOLDERS[kind] / f"{text}.yaml"
    if shipped.is_file():
        return shipped
    raise UserError(f"{kind}: {text!r} is neither a file nor a shipped {kind}; shipped: "
                    f"{', '.join(names(kind))} (`recipesearch {kind}s`)")


def describe(kind: str, width: int = 100) -> list[tuple[str, str]]:
    """(name, the first sentences of its file's leading comment, cut to ``width``) for every shipped file of
    ``kind``: what ``recipesearch spaces`` and ``recipesearch recipes`` print."""
    rows = []
    for name in names(kind):
        lines = (FOLDERS[kind] / f"{name}.yaml").read_text().splitlines()
        comment = " ".join(line.lstrip("#").strip() for line in itertools.takewhile(lambda s: s.startswith("#"), lines))
        sentence = ""
        for part in re.split(r"(?<=\.)\s", comment):  # whole sentences, until one says enough
            sentence = f"{sentence} {part}".strip()
            if len(sentence) >= 40:
                break
        rows.append((name, sentence if len(sentence) <= width else sentence[:width - 1].rstrip() + "…"))
    return rows
