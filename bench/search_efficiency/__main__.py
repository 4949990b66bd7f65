"""``python -m bench.search_efficiency``: the benchmark's own command line."""
from __future__ import annotations

from bench.search_efficiency.run import main

main()
