"""The search engine behind ``recipesearch search`` and ``recipesearch.search()``.

``loop`` (ask → recipe → execute → tell, Ray-free) · ``executors`` (in process) and ``ray_tune`` (Ray Tune)
run its proposals · ``study`` (the Optuna study through its public API, trials.csv rows) · ``samplers``
(TPE, NSGA-II, GP, random, the hand sweep) · ``driver`` (run directory, display, report) · ``api``
(``search()`` and its ``SearchResult``) · ``progress`` (live table and log lines) · ``trial`` (what one
trial runs). Importing this package imports none of them (Ray and torch load on first use).
"""
