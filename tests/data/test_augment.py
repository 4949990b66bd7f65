"""random_crop / random_hflip / normalize against slow per-sample references on hand-made tensors."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from recipesearch.data import normalize, normalize_params, random_crop, random_hflip


def _matching_offsets(image: torch.Tensor, window: torch.Tensor, padding: int) -> list[tuple[int, int]]:
    """Slow reference: every (dy, dx) whose window of the zero-padded image equals ``window``."""
    h, w = image.shape[-2:]
    padded = F.pad(image, (padding,) * 4)
    return [
        (dy, dx)
        for dy in range(2 * padding + 1)
        for dx in range(2 * padding + 1)
        if torch.equal(padded[:, dy : dy + h, dx : dx + w], window)
    ]


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_crop_windows_come_from_the_padded_image(dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randint(1, 256, (64, 3, 7, 5), generator=g).to(dtype)  # no zeros: padding is identifiable
    out = random_crop(x, 2, torch.Generator().manual_seed(1))
    assert out.shape == x.shape and out.dtype == dtype
    seen = set()
    for k in range(len(x)):
        offsets = _matching_offsets(x[k], out[k], 2)
        assert len(offsets) == 1, f"sample {k} is not a window of its padded image"
        seen.add(offsets[0])
    assert len(seen) > 10  # offsets differ per sample (25 possible)


def test_crop_covers_every_offset_and_zero_padding_is_identity():
    x = torch.arange(1, 10, dtype=torch.uint8).view(1, 1, 3, 3).repeat(400, 1, 1, 1)
    out = random_crop(x, 1, torch.Generator().manual_seed(0))
    offsets = {_matching_offsets(x[k], out[k], 1)[0] for k in range(len(x))}
    assert offsets == {(dy, dx) for dy in range(3) for dx in range(3)}
    assert random_crop(x, 0) is x


def test_crop_is_reproducible_with_a_seeded_generator():
    x = torch.randint(0, 256, (16, 1, 8, 8), dtype=torch.uint8)
    a = random_crop(x, 3, torch.Generator().manual_seed(5))
    b = random_crop(x, 3, torch.Generator().manual_seed(5))
    assert torch.equal(a, b)


def test_hflip_flips_exactly_the_masked_samples():
    x = torch.randint(0, 256, (200, 2, 4, 6), dtype=torch.uint8)
    out = random_hflip(x, 0.5, torch.Generator().manual_seed(0))
    flipped = torch.tensor([torch.equal(out[k], x[k].flip(-1)) for k in range(len(x))])
    kept = torch.tensor([torch.equal(out[k], x[k]) for k in range(len(x))])
    assert (flipped | kept).all()
    assert 60 < int(flipped.sum()) < 140
    assert torch.equal(random_hflip(x, 1.0), x.flip(3))
    assert torch.equal(random_hflip(x, 0.0), x)


def test_normalize_matches_reference():
    x = torch.randint(0, 256, (4, 3, 5, 5), dtype=torch.uint8)
    mean, std = (0.1, 0.5, 0.9), (0.2, 0.25, 0.3)
    ref = (x.double() / 255 - torch.tensor(mean).view(1, 3, 1, 1)) / torch.tensor(std).view(1, 3, 1, 1)
    out = normalize(x, mean, std)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out.double(), ref, rtol=0, atol=1e-5)
    torch.testing.assert_close(normalize(x.float(), mean, std, normalize_params(mean, std)), out)


def test_reflect_padding_mirrors_the_border_without_repeating_the_edge():
    from recipesearch.data.augment import pad

    x = torch.tensor([[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]]], dtype=torch.uint8)
    out = pad(x, 1, "reflect")
    assert out[0, 0, 0].tolist() == [5, 4, 5, 6, 5] and out[0, 0, :, 0].tolist() == [5, 2, 5, 8, 5]
    assert torch.equal(pad(x, 1, "zeros"), F.pad(x, (1, 1, 1, 1)))
    with pytest.raises(ValueError, match="larger"):
        pad(x, 3, "reflect")
    with pytest.raises(ValueError, match="zeros or reflect"):
        pad(x, 1, "circular")  # type: ignore[arg-type]
