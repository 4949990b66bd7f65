"""Benchmarks of recipesearch (issue 5): not tests, measurements. ``python -m bench.run_all [--quick]``.

One module per benchmark, each with ``NAME``, ``TITLE``, ``run(quick) -> dict`` (raw results, saved to
``reports/bench/<NAME>.json``) and ``render(result) -> str`` (its section of ``reports/benchmarks.md``):
trainer_efficiency, algorithm_cost, scheduling_overhead, search_efficiency, recipe_speedup.
``bench/replay.py`` holds the replay mode used by search_efficiency.
"""
