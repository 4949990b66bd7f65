"""Channels-last: after INIT the model's convolution weights and the training batches are NHWC, and the
model computes what the contiguous (NCHW) one does.

Digits has one channel, and a tensor with one channel is both NCHW- and NHWC-contiguous, so the run tests
use an RGB copy of digits (the gray channel three times) where the two layouts differ in memory.
"""
from __future__ import annotations

import copy
import dataclasses

import pytest
import torch
from torch import nn

from recipesearch.algorithms import Algorithm
from recipesearch.algorithms.channels_last import apply_channels_last
from recipesearch.data import DataBundle, load_data
from recipesearch.data.spec import DataSpec
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State
from recipesearch.train.loop import Trainer

NHWC = torch.channels_last


def is_nhwc_only(t: torch.Tensor) -> bool:
    """NHWC-contiguous and not NCHW-contiguous: the layout really changed (not a degenerate shape)."""
    return t.is_contiguous(memory_format=NHWC) and not t.is_contiguous()


def conv_weights(model: nn.Module) -> list[torch.Tensor]:
    return [m.weight for m in model.modules() if isinstance(m, nn.Conv2d)]


def small_convnet() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 4))


def test_function_converts_conv_weights_and_keeps_outputs() -> None:
    torch.manual_seed(0)
    model = small_convnet().eval()
    reference = copy.deepcopy(model)
    assert not any(is_nhwc_only(w) for w in conv_weights(model))  # the check below is not vacuous
    assert apply_channels_last(model) is model
    assert all(is_nhwc_only(w) for w in conv_weights(model))
    assert all(w.dim() != 4 or is_nhwc_only(w) for w in model.parameters())
    x = torch.randn(4, 3, 12, 12)
    with torch.no_grad():
        expected = reference(x)
        torch.testing.assert_close(model(x.contiguous(memory_format=NHWC)), expected, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(model(x), expected, atol=1e-5, rtol=1e-4)  # NCHW input still works


@pytest.fixture(scope="module")
def rgb_digits() -> DataBundle:
    gray = load_data(DataSpec(name="digits"), torch.device("cpu"))

    def rgb(split):
        return dataclasses.replace(split, images=split.images.expand(-1, 3, -1, -1).contiguous())

    return dataclasses.replace(gray, train=rgb(gray.train), test=rgb(gray.test),
                               val=rgb(gray.val) if gray.val is not None else None,
                               channels=3, mean=gray.mean * 3, std=gray.std * 3)


class _InputProbe(Algorithm):
    """Records the layout of every batch the model is fed."""

    name = "input_probe"
    description = "records the batch layout"
    citation = "-"
    events = frozenset({Event.BEFORE_FORWARD})

    def __init__(self) -> None:
        super().__init__()
        self.nhwc: list[bool] = []

    def apply(self, event: Event, state: State) -> None:
        self.nhwc.append(is_nhwc_only(state.x))


def test_after_init_the_model_is_nhwc_and_computes_the_same(tiny_recipe, rgb_digits) -> None:
    plain = Trainer(tiny_recipe(max_duration=0.1), data=rgb_digits)
    fast = Trainer(tiny_recipe({"channels_last": {}}, max_duration=0.1), data=rgb_digits)
    assert fast.state.channels_last and not plain.state.channels_last
    weights = conv_weights(fast.state.model)
    assert weights and all(is_nhwc_only(w) for w in weights)
    assert not any(is_nhwc_only(w) for w in conv_weights(plain.state.model))
    x, _ = next(iter(fast.state.train_loader))
    assert is_nhwc_only(x)  # the loader follows the model
    plain.state.model.eval()
    fast.state.model.eval()
    with torch.no_grad():  # same seed, same initial weights: only the layout differs
        torch.testing.assert_close(fast.state.model(x), plain.state.model(x.contiguous()), atol=1e-5, rtol=1e-4)


def test_every_training_batch_reaches_the_model_nhwc(tiny_recipe, rgb_digits) -> None:
    trainer = Trainer(tiny_recipe({"channels_last": {}}, max_duration=0.1), data=rgb_digits)
    probe = _InputProbe()
    trainer._by_event[Event.BEFORE_FORWARD].append(probe)
    trainer.train()
    assert len(probe.nhwc) == trainer.state.total_steps > 0 and all(probe.nhwc)
