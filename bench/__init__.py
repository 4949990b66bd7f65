"""Benchmarks of recipesearch (issue 5): not tests, measurements. ``python -m bench.run_all [--quick]``.

One module per benchmark (``bench.run_all.BENCHMARKS``), each following the contract stated once in
``bench/protocol.py``: ``NAME``, ``TITLE``, ``run(quick) -> dict`` (raw results, saved to
``reports/bench/<NAME>.json``), ``render(result) -> str`` (its section of ``reports/benchmarks.md``),
``main(argv)`` and optionally ``NEEDS_CUDA``. The other modules are their parts and shared helpers:
``bench/common.py`` (results, statistics, tables), ``bench/replay.py`` (the replay mode used by
search_efficiency), ``bench/gpu_*.py`` (the GPU benchmark's sections).
"""
