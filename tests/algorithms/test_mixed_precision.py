"""Mixed precision: INIT switches autocast on; forward outputs come out in the low-precision dtype."""
from __future__ import annotations

import math

import pytest
import torch

from recipesearch.algorithms import get_algorithm
from recipesearch.errors import ConfigError
from recipesearch.train.loop import Trainer, fit


def test_bf16_forward_runs_in_bf16(tiny_recipe) -> None:
    s = Trainer(tiny_recipe({"mixed_precision": {}})).state
    assert s.autocast_dtype == torch.bfloat16 and s.grad_scaler is None  # bf16 needs no loss scaling
    x = torch.randn(4, 1, 16, 16)
    with s.autocast():
        assert s.model(x).dtype == torch.bfloat16
    assert s.model(x).dtype == torch.float32  # only inside the autocast region


def test_fp16_gets_a_grad_scaler_and_overrides_the_recipe(tiny_recipe) -> None:
    s = Trainer(tiny_recipe({"mixed_precision": {"dtype": "fp16"}}, precision="bf16")).state
    assert s.autocast_dtype == torch.float16
    assert s.grad_scaler is not None  # created by the trainer after INIT


def test_unknown_dtype_is_refused() -> None:
    with pytest.raises(ConfigError, match="dtype"):
        get_algorithm("mixed_precision")(dtype="fp8")


def test_short_training_run(tiny_recipe) -> None:
    result = fit(tiny_recipe({"mixed_precision": {}}, batch_size=32, max_duration=2))
    assert math.isfinite(result.loss) and result.accuracy > 0.3
