"""Proxy-selected batches: the proxy trains on every whole batch, the model on the hardest part of it by the proxy's
loss; the proxy is the recipe's model narrowed, or a named small one."""
from __future__ import annotations

import copy
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from recipesearch.algorithms import get_algorithm
from recipesearch.algorithms.proxy_selection import proxy_options, select_by_proxy
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.train.loop import Trainer, fit


def _proxy() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(4, 5))


@pytest.mark.parametrize("keep", [0.5, 0.25, 1.0])
def test_keeps_the_samples_the_proxy_found_hardest_and_trains_the_proxy_on_all(keep: float) -> None:
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(32, 3, 8, 8, generator=g), torch.randint(5, (32,), generator=g)
    proxy = _proxy()
    before = copy.deepcopy(proxy)
    with torch.no_grad():
        losses = F.cross_entropy(before(x), y, reduction="none")  # the proxy's loss before its step
    x_kept, y_kept = select_by_proxy(x, y, proxy, torch.optim.SGD(proxy.parameters(), lr=0.1), keep=keep)
    n = int(keep * 32)
    expected = losses.argsort(descending=True)[:n].sort().values  # top-k, in batch order
    assert torch.equal(x_kept, x[expected]) and torch.equal(y_kept, y[expected])
    # the proxy took one step on the whole batch: its weights moved, as one SGD step on the mean loss moves them
    reference = copy.deepcopy(before)
    F.cross_entropy(reference(x), y).backward()
    with torch.no_grad():
        for p, q in zip(proxy.parameters(), reference.parameters(), strict=True):
            assert torch.allclose(p, q - 0.1 * q.grad, atol=1e-6)


def test_the_proxy_is_the_models_width_narrowed() -> None:
    assert proxy_options("cnn", {}, 0.25) == {"width": 8}  # channels: 32 -> 8
    assert proxy_options("cnn", {"width": 6}, 0.1) == {"width": 1}  # never below one channel
    assert proxy_options("resnet8", {"zero_init_residual": False}, 0.25) == {"zero_init_residual": False,
                                                                             "width": 0.25}  # a multiplier
    assert proxy_options("resnet9", {"width": 32}, 0.5) == {"width": 16}
    with pytest.raises(ConfigError, match=r"^algorithms\.proxy_selection\.model: model 'tv/resnet18' has no width"):
        proxy_options("tv/resnet18", {}, 0.25)


@pytest.mark.parametrize(("params", "field"), [({"width": 1.5}, "width"), ({"keep": 0}, "keep"),
                                               ({"start": 1.0}, "start"), ({"depth": 2}, "depth")])
def test_bad_params_are_one_line_naming_the_field(params, field) -> None:
    with pytest.raises(ConfigError, match=rf"^algorithms\.proxy_selection\.{field}: ") as err:
        get_algorithm("proxy_selection")(**params)
    assert "\n" not in str(err.value)


def test_training_gives_the_model_half_of_each_batch(tiny_recipe) -> None:
    trainer = Trainer(tiny_recipe({"proxy_selection": {"keep": 0.5, "width": 0.5}}, batch_size=32, max_duration=1))
    seen: list[int] = []

    def record(module, args):
        if torch.is_grad_enabled():  # a training pass, not evaluation
            seen.append(args[0].shape[0])

    trainer.state.model.register_forward_pre_hook(record)
    trainer.train()
    assert len(seen) == trainer.state.total_steps and seen[0] == 16 and all(b <= 16 for b in seen)
    proxy = next(a for a in trainer.algorithms if a.name == "proxy_selection").proxy
    # resnet8 at half width: about a quarter of the parameters
    assert sum(p.numel() for p in proxy.parameters()) < sum(p.numel() for p in trainer.state.model.parameters()) / 2


def test_a_named_small_model_stands_in_for_a_model_without_width(tiny_recipe) -> None:
    result = fit(tiny_recipe({"proxy_selection": {"model": "cnn", "keep": 0.5}}, batch_size=32, max_duration=1))
    assert math.isfinite(result.loss)


def test_the_proxy_takes_the_cheapest_layout_of_the_model(tiny_recipe) -> None:
    # channels_last when the model is (its batches arrive NHWC), and max-pool before BN (pool_before_norm): the
    # proxy has no BlurPool, so that order computes the same function on a quarter of the pixels.
    recipe = tiny_recipe({"proxy_selection": {"width": 0.5}, "channels_last": {}}, model={"name": "cnn", "width": 8})
    trainer = Trainer(recipe)
    trainer.fire(Event.FIT_START)
    proxy = next(a for a in trainer.algorithms if a.name == "proxy_selection").proxy
    assert [type(m) for m in proxy.features][:4] == [nn.Conv2d, nn.MaxPool2d, nn.BatchNorm2d, nn.ReLU]
    conv2 = proxy.features[4]
    assert conv2.weight.is_contiguous(memory_format=torch.channels_last) and not conv2.weight.is_contiguous()
    plain = Trainer(tiny_recipe({"proxy_selection": {"width": 0.5}}))
    plain.fire(Event.FIT_START)
    assert next(a for a in plain.algorithms if a.name == "proxy_selection").proxy.features[4].weight.is_contiguous()
