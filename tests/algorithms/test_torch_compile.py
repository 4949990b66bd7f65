from __future__ import annotations

import pytest
import torch
from torch import nn

from recipesearch.algorithms import torch_compile as tc
from recipesearch.algorithms.torch_compile import TorchCompile, apply_torch_compile, compile_problem
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


def _state(model: nn.Module) -> State:
    return State(recipe=None, model=model, data=None, device=torch.device("cpu"), num_classes=2, loss_fn=None)


@pytest.mark.slow
@pytest.mark.skipif(compile_problem(torch.device("cpu")) is not None, reason="no C++ compiler for inductor")
def test_compiled_model_matches_eager_on_cpu():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3)).eval()
    x = torch.randn(2, 1, 6, 6)
    expected = model(x)
    state = _state(model)
    TorchCompile().apply(Event.INIT, state)
    assert state.model is not model and state.model._orig_mod is model  # parameters are shared
    torch.testing.assert_close(state.model(x), expected, atol=1e-5, rtol=1e-4)


def test_unknown_backend_is_a_config_error():
    state = _state(nn.Linear(2, 2))
    with pytest.raises(ConfigError, match="unknown backend"):
        TorchCompile(backend="no_such_backend").apply(Event.INIT, state)


def test_missing_compiler_is_a_config_error_at_init(monkeypatch):
    import torch._inductor.cpp_builder as cpp_builder

    def no_compiler() -> str:
        raise RuntimeError("no C++ compiler")

    monkeypatch.setattr(cpp_builder, "get_cpp_compiler", no_compiler)
    state = _state(nn.Linear(2, 2))
    with pytest.raises(ConfigError, match="C\\+\\+ compiler"):
        TorchCompile().apply(Event.INIT, state)
    assert isinstance(state.model, nn.Linear)  # nothing was wrapped


def test_mode_is_validated():
    with pytest.raises(ConfigError, match="torch_compile.mode"):
        TorchCompile(mode="fastest")


def test_eager_backend_wraps_without_a_compiler():
    model = nn.Linear(2, 2)
    compiled = apply_torch_compile(model, backend="eager")
    x = torch.randn(3, 2)
    torch.testing.assert_close(compiled(x), model(x))
    assert tc.compile_problem(torch.device("cpu"), "eager") is None


@pytest.mark.slow
def test_averaging_sees_through_the_compiled_wrapper(tiny_recipe):
    # EMA deep-copies the eager module behind the wrapper; the eager backend traces without a C++ build.
    from recipesearch.train.loop import Trainer

    trainer = Trainer(tiny_recipe({"torch_compile": {"backend": "eager"}, "ema": {}}))
    result = trainer.fit()
    assert hasattr(trainer.state.model, "_orig_mod")
    assert not hasattr(trainer.state.eval_model, "_orig_mod")
    assert result.accuracy > 0.2
