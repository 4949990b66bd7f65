"""ColOut: the batch loses the same random rows and columns; kept pixels are the originals, in order."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from recipesearch.algorithms import get_algorithm
from recipesearch.algorithms.colout import colout_batch
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.train.loop import fit


def _positions(b: int, c: int, h: int, w: int) -> torch.Tensor:
    """Pixel (row r, column k) holds 1000 * r + k, so each output pixel tells where it came from."""
    grid = torch.arange(h)[:, None] * 1000 + torch.arange(w)
    return grid.float().expand(b, c, h, w).clone()


@pytest.mark.parametrize(("p_row", "p_col", "h", "w", "rows", "cols"),
                         [(0.15, 0.15, 32, 32, 28, 28), (0.15, 0.25, 20, 20, 17, 15), (0.5, 0.0, 16, 12, 8, 12)])
def test_shrinks_by_the_expected_rows_and_columns(p_row, p_col, h, w, rows, cols) -> None:
    x = _positions(4, 3, h, w)
    out = colout_batch(x, p_row, p_col, torch.Generator().manual_seed(0))
    assert out.shape == (4, 3, rows, cols)  # ceil((1 - p) * side) kept, as Composer
    kept_rows = (out[0, 0, :, 0] // 1000).long()
    kept_cols = (out[0, 0, 0, :] % 1000).long()
    assert (kept_rows.diff() > 0).all() and (kept_cols.diff() > 0).all()  # original order, no repeats
    torch.testing.assert_close(out, x[:, :, kept_rows][:, :, :, kept_cols])  # kept pixels are the originals
    assert (out == out[:1]).all()  # the same rows and columns for the whole batch


def test_no_drop_is_identity() -> None:
    x = torch.randn(2, 3, 8, 8)
    assert torch.equal(colout_batch(x, 0.0, 0.0), x)


def test_hook_shrinks_the_batch() -> None:
    state = SimpleNamespace(x=torch.randn(4, 1, 16, 16), channels_last=False)
    get_algorithm("colout")().apply(Event.AFTER_DATALOADER, state)
    assert state.x.shape == (4, 1, 14, 14)


def test_drop_fraction_bounds() -> None:
    with pytest.raises(ConfigError, match="p_row"):
        get_algorithm("colout")(p_row=1.0)


def test_short_training_run(tiny_recipe) -> None:
    # 32 px digits: at the default 16 px, 14 px training maps pool to 3x3 against 4x4 at evaluation and
    # the train/test resolution gap (Touvron et al. 2019, FixRes) makes 2-epoch accuracy swing 0.35-0.65.
    result = fit(tiny_recipe({"colout": {}}, batch_size=32, max_duration=2, data={"image_size": 32}))
    assert math.isfinite(result.loss) and result.accuracy > 0.3
