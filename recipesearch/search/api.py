"""``recipesearch.search(space, out=...)``: the Python face of ``recipesearch search``.

    import recipesearch
    df = recipesearch.search("search_spaces/digits.yaml", out="runs/digits")
    df[df.state == "COMPLETE"].sort_values("train_seconds")

Returns the trials table, the same rows and columns as ``OUT/trials.csv``.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from recipesearch.space import SearchSpace


def search(
    space: str | Path | SearchSpace,
    out: str | Path,
    resume: bool = False,
    force: bool = False,
    address: str | None = None,
    storage: str | None = None,
    quiet: bool = False,
    trials: int | None = None,
    concurrency: int | None = None,
    report: bool = True,
    report_every: int = 4,
    command: list[str] | None = None,
) -> pd.DataFrame:
    """Run (or with ``resume=True`` continue) a recipe search; return its trials as a DataFrame.

    ``space``: a space YAML path or a loaded ``SearchSpace``. ``out``: the run directory; an existing
    non-empty one needs ``resume`` or ``force``. ``address``: join that Ray cluster instead of starting a
    local Ray. ``storage``: an Optuna RDB URL instead of ``sqlite:///OUT/study.db``. ``trials`` and
    ``concurrency`` override the space's values. ``report``: build the HTML report (recipesearch.report)
    every ``report_every`` finished trials and at the end. Bad input raises ``recipesearch.errors.UserError``
    before anything is written or started.
    """
    from recipesearch.search import storage as st
    from recipesearch.space import SearchSpace, load_space

    if resume and force:
        from recipesearch.errors import UserError

        raise UserError("--resume and --force contradict each other; pass one")
    loaded = space if isinstance(space, SearchSpace) else load_space(space)
    st.check_run_dir(out, loaded, resume, force)  # fails before Ray or torch are even imported

    from recipesearch.search.runner import SearchOptions, SearchRunner

    options = SearchOptions(out=Path(out), resume=resume, force=force, address=address, storage=storage,
                            quiet=quiet, trials=trials, concurrency=concurrency, report=report,
                            report_every=report_every,
                            command=command or _api_command(loaded, out))
    return SearchRunner(loaded, options).run()


def _api_command(space: Any, out: str | Path) -> list[str]:
    if "recipesearch" in Path(sys.argv[0]).name or sys.argv[1:2] == ["search"]:
        return list(sys.argv)
    return ["recipesearch.search", str(space.path or space.name), "--out", str(out)]
