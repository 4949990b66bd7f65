"""CutMix: a box pasted from the permuted batch; targets weighted by the pasted area."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from recipesearch.algorithms import get_algorithm
from recipesearch.algorithms.cutmix import cutmix_batch
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.train.loop import fit


def _constant_images(b: int, side: int) -> torch.Tensor:
    """Image i is filled with the value i, so every pixel tells which sample it came from."""
    return torch.arange(b, dtype=torch.float32).reshape(b, 1, 1, 1).expand(b, 2, side, side).clone()


@pytest.mark.parametrize("seed", range(12))
def test_pasted_pixels_come_from_the_partner_and_targets_match_the_area(seed: int) -> None:
    b, side = 16, 12
    x = _constant_images(b, side)
    g = torch.Generator().manual_seed(seed)
    out, targets, lam = cutmix_batch(x, torch.arange(b), alpha=1.0, num_classes=b, generator=g)
    torch.testing.assert_close(targets.sum(1), torch.ones(b))
    boxes = []
    for i in range(b):
        foreign = out[i, 0] != i
        assert torch.equal(out[i, 0], out[i, 1])  # the box spans every channel
        if not foreign.any():
            # mixed with itself (perm[i] == i) or an empty box: all mass stays on i
            assert targets[i, i].item() == pytest.approx(1.0)
            continue
        j = int(out[i, 0][foreign][0])
        assert (out[i, 0][foreign] == j).all()  # one source sample per image
        rows, cols = foreign.nonzero(as_tuple=True)
        box = (int(rows.min()), int(rows.max()) + 1, int(cols.min()), int(cols.max()) + 1)
        area = (box[1] - box[0]) * (box[3] - box[2])
        assert area == int(foreign.sum())  # a solid rectangle
        boxes.append(box)
        assert targets[i, j].item() == pytest.approx(area / side**2)  # mass = pasted area fraction
        assert targets[i, i].item() == pytest.approx(lam)
        assert 1 - lam == pytest.approx(area / side**2)
    assert len(set(boxes)) <= 1  # one box for the whole batch


def test_soft_targets_and_shapes() -> None:
    g = torch.Generator().manual_seed(0)
    y = torch.softmax(torch.randn(8, 4, generator=g), 1)
    out, targets, _ = cutmix_batch(torch.randn(8, 3, 10, 10, generator=g), y, 1.0, 4, generator=g)
    assert out.shape == (8, 3, 10, 10) and targets.shape == (8, 4)
    torch.testing.assert_close(targets.sum(1), torch.ones(8))


def test_hook_mixes_the_batch() -> None:
    state = SimpleNamespace(x=_constant_images(8, 8), y=torch.arange(8), num_classes=8)
    torch.manual_seed(0)
    get_algorithm("cutmix")().apply(Event.AFTER_DATALOADER, state)
    assert state.y.shape == (8, 8)


def test_alpha_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="alpha"):
        get_algorithm("cutmix")(alpha=-1)


def test_short_training_run(tiny_recipe) -> None:
    result = fit(tiny_recipe({"cutmix": {}}, batch_size=32, max_duration=2))
    assert math.isfinite(result.loss) and result.accuracy > 0.3
