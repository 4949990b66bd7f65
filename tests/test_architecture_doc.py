"""docs/ARCHITECTURE.md: its generated block matches the code, and it names every module of recipesearch/."""
from __future__ import annotations

import re

from tools.architecture import BEGIN, COMMAND, DOC, END, current_block, generated_block, module_path, part_graph
from tools.import_graph import package_modules


def test_generated_block_matches_the_code() -> None:
    held = current_block(DOC.read_text())
    assert held is not None, f"{DOC} lost its markers {BEGIN!r} ... {END!r}; run `{COMMAND}` to add the block"
    # A plain bool: pytest's diff of two 450-line strings would bury the one thing to do.
    up_to_date = held == generated_block()
    assert up_to_date, f"{DOC}'s generated block is stale; run `{COMMAND}` from the repository root"


def test_every_module_is_named() -> None:
    text = DOC.read_text()
    # A whole path (engine/loop.py): neither the tail of a longer one (report/info.py for info.py) nor a prefix.
    unnamed = [path for path in map(module_path, package_modules())
               if not re.search(rf"(?<![\w/.]){re.escape(path)}(?!\w)", text)]
    assert unnamed == [], f"{DOC} does not name {unnamed}; run `{COMMAND}`, then say in the prose what they are for"


def test_a_part_is_a_subpackage_or_a_top_level_module() -> None:
    graph = {"recipesearch": {"recipesearch.engine.api"}, "recipesearch.engine.api": {"recipesearch.plugins"},
             "recipesearch.engine": set(), "recipesearch.plugins": set()}
    assert part_graph(graph) == {"__init__.py": {"engine/"}, "engine/": {"plugins.py"}, "plugins.py": set()}
