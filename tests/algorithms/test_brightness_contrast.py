"""Brightness/contrast jitter: each image scaled by its own factors within 1 ± strength, in pixel units, the
normalisation kept; bad strengths are one line; a short training run learns."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from recipesearch.algorithms import get_algorithm
from recipesearch.algorithms.brightness_contrast import brightness_contrast_batch
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.train.loop import fit


def _images(n: int = 256, seed: int = 0) -> torch.Tensor:
    return 0.2 + 0.5 * torch.rand(n, 3, 8, 8, generator=torch.Generator().manual_seed(seed))  # inside [0.2, 0.7]


def test_brightness_scales_each_image_by_one_factor_within_its_range():
    x = _images()
    out = brightness_contrast_batch(x, 0.3, 0.0, torch.Generator().manual_seed(1))
    ratio = out / x  # no clipping: 0.7 x 1.3 < 1
    per_image = ratio.flatten(1)
    assert torch.allclose(per_image, per_image[:, :1].expand_as(per_image), atol=1e-5)  # one factor an image
    factors = per_image[:, 0]
    assert bool(((factors >= 0.7 - 1e-6) & (factors <= 1.3 + 1e-6)).all())
    assert factors.min() < 0.8 and factors.max() > 1.2  # the whole range is drawn, darker and brighter


def test_contrast_stretches_each_image_about_its_mean_grey():
    x = _images()
    out = brightness_contrast_batch(x, 0.0, 0.4, torch.Generator().manual_seed(2))
    grey = (x * torch.tensor([0.299, 0.587, 0.114]).reshape(1, 3, 1, 1)).sum(1, keepdim=True).mean((2, 3), True)
    factors = ((out - grey) / (x - grey)).flatten(1).median(1).values
    assert bool(((factors >= 0.6 - 1e-4) & (factors <= 1.4 + 1e-4)).all())
    assert factors.min() < 0.7 and factors.max() > 1.3
    assert torch.allclose(out, (grey + factors.reshape(-1, 1, 1, 1) * (x - grey)).clamp(0, 1), atol=1e-5)


def test_a_normalised_batch_is_jittered_in_pixel_units_and_stays_normalised():
    mean, std = [0.5, 0.4, 0.3], [0.2, 0.25, 0.3]
    m, s = torch.tensor(mean).reshape(1, 3, 1, 1), torch.tensor(std).reshape(1, 3, 1, 1)
    x = _images()
    out = brightness_contrast_batch((x - m) / s, 0.3, 0.3, torch.Generator().manual_seed(3), mean=mean, std=std)
    plain = brightness_contrast_batch(x, 0.3, 0.3, torch.Generator().manual_seed(3))
    assert torch.allclose(out * s + m, plain, atol=1e-5)
    half = brightness_contrast_batch(x.half(), 0.3, 0.3)
    assert half.dtype == torch.float16 and half.shape == x.shape


def test_the_hook_changes_the_training_batch():
    x = _images(4)
    state = SimpleNamespace(x=x.clone(), data=SimpleNamespace(mean=None, std=None))
    get_algorithm("brightness_contrast")().apply(Event.AFTER_DATALOADER, state)
    assert state.x.shape == x.shape and not torch.equal(state.x, x)


@pytest.mark.parametrize("params, field", [({"brightness": 1.5}, "brightness"), ({"contrast": -0.1}, "contrast"),
                                           ({"brightness": 0, "contrast": 0}, "change nothing")])
def test_bad_strengths_are_one_line(params, field):
    with pytest.raises(ConfigError, match=field) as err:
        get_algorithm("brightness_contrast")(**params)
    assert "\n" not in str(err.value)


def test_short_training_run(tiny_recipe):
    result = fit(tiny_recipe({"brightness_contrast": {"brightness": 0.3, "contrast": 0.3}}, batch_size=32,
                             max_duration=2))
    assert math.isfinite(result.loss) and result.accuracy > 0.3
