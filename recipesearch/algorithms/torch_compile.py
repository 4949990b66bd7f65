"""torch.compile: trace the model into fused kernels (TorchDynamo + Inductor).

Ansel et al. 2024, "PyTorch 2: Faster Machine Learning Through Dynamic Python Bytecode Transformation and
Graph Compilation" (ASPLOS).

Compilation is lazy: it happens at the first training step, inside the timed region, and again at the
first evaluation batch (eval mode is a new graph), outside it. So a run pays its compile time (seconds
to minutes) in ``train_seconds``: a real per-run cost that short budgets may not win back.
"""
from __future__ import annotations

from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import nn

from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State

_FIELD = "algorithms.torch_compile"


def compile_problem(device: torch.device, backend: str = "inductor") -> str | None:
    """Why ``torch.compile`` cannot work here, or None; checked up front so a trial fails with one line
    at INIT instead of a traceback from inside the first training step."""
    import torch._dynamo

    if not torch._dynamo.is_dynamo_supported():
        return "torch.compile is not supported on this Python/platform"
    if backend not in torch._dynamo.list_backends(exclude_tags=()):  # debug backends (eager) are valid too
        return f"unknown backend {backend!r}; allowed: {', '.join(torch._dynamo.list_backends())}"
    if backend != "inductor":
        return None
    if device.type == "cuda":
        from torch.utils._triton import has_triton

        return None if has_triton() else "the inductor backend needs Triton on CUDA (pip install triton)"
    if device.type == "cpu":
        try:
            from torch._inductor.cpp_builder import get_cpp_compiler

            get_cpp_compiler()
        except Exception:  # InvalidCxxCompiler, or a torch whose private layout moved
            return "the inductor backend needs a C++ compiler on CPU (install g++ or set CXX)"
    return None


def apply_torch_compile(model: nn.Module, mode: str = "default", backend: str = "inductor") -> nn.Module:
    """The compiled wrapper; it shares parameters with ``model`` (reachable as ``._orig_mod``)."""
    return torch.compile(model, mode=mode, backend=backend)


class TorchCompileParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["default", "reduce-overhead", "max-autotune"] = Field(
        "default", description="reduce-overhead adds CUDA graphs; max-autotune searches kernels (long compile)")
    backend: str = Field("inductor", description="a torch._dynamo backend")


@register_algorithm
class TorchCompile(Algorithm):
    name = "torch_compile"
    description = "Compile the model with TorchDynamo/Inductor; faster steps, compile time paid in the run"
    citation = "Ansel et al. 2024, PyTorch 2 (TorchDynamo and TorchInductor)"
    events = frozenset({Event.INIT})
    order = 95  # last: compile the model after all surgery and channels_last (90)
    Params = TorchCompileParams

    def apply(self, event: Event, state: State) -> None:
        problem = compile_problem(state.device, self.params.backend)
        if problem:
            raise ConfigError(_FIELD, problem)
        state.model = apply_torch_compile(state.model, self.params.mode, self.params.backend)
