"""The shipped prior (``recipesearch/shipped/prior.yaml``): the confirmed recipes of the example searches under
``reports/examples``, for ``warm_start: shipped`` (engine/warm_start.py says what a search takes from it).

Run ``python -m tools.prior`` from the repository root after adding or regenerating an example search;
``tests/engine/test_warm_start.py`` fails until the file matches.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from recipesearch.engine.warm_start import PRIOR_FILE, prior_entries

EXAMPLES = Path(__file__).resolve().parents[1] / "reports" / "examples"
HEADER = ("# The shipped prior (warm_start: shipped): the confirmed recipes of reports/examples, best speedup first.\n"
          "# Written by `python -m tools.prior`: do not edit.\n")


def render() -> str:
    return HEADER + yaml.safe_dump({"recipes": prior_entries(EXAMPLES)}, sort_keys=False, width=120)


if __name__ == "__main__":
    PRIOR_FILE.write_text(render())
    print(f"wrote {PRIOR_FILE}")
