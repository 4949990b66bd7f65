from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from recipesearch.algorithms.sam import SAM, sam_perturb, sam_restore
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State
from recipesearch.train.loop import fit


class Quadratic(nn.Module):
    """L(w) = 0.5 * a * |w|^2, so dL/dw = a * w."""

    def __init__(self, w: list[float], a: float = 3.0):
        super().__init__()
        self.w = nn.Parameter(torch.tensor(w))
        self.a = a

    def loss(self) -> torch.Tensor:
        return 0.5 * self.a * (self.w ** 2).sum()


def _state(model: Quadratic, opt: torch.optim.Optimizer, calls: list[int]) -> State:
    state = State(recipe=None, model=model, data=None, device=torch.device("cpu"), num_classes=1,
                  loss_fn=None, optimizer=opt)

    def forward_backward() -> torch.Tensor:
        calls.append(state.step)
        opt.zero_grad(set_to_none=True)
        loss = model.loss()
        loss.backward()
        return loss

    state.forward_backward = forward_backward
    return state


def _train_step(state: State, sam: SAM | None) -> None:
    state.optimizer.zero_grad(set_to_none=True)
    state.model.loss().backward()
    if sam is not None and sam.match(Event.AFTER_BACKWARD, state):
        sam.apply(Event.AFTER_BACKWARD, state)
    state.optimizer.step()
    state.step += 1


def test_one_step_matches_hand_computed_sam_on_a_quadratic():
    w0, a, rho, lr = 2.0, 3.0, 0.1, 0.1
    model = Quadratic([w0], a)
    state = _state(model, torch.optim.SGD(model.parameters(), lr=lr), [])
    _train_step(state, SAM(rho=rho))
    # e = rho * g / |g| = +rho; the step uses the gradient at w0 + e.
    expected = w0 - lr * a * (w0 + rho)
    plain = w0 - lr * a * w0
    assert model.w.item() == pytest.approx(expected, abs=1e-6)
    assert abs(model.w.item() - plain) > 1e-3


def test_perturbation_has_norm_rho_along_the_gradient_and_is_undone():
    w = torch.tensor([3.0, -4.0], requires_grad=True)
    w.grad = torch.tensor([6.0, -8.0])
    (e,) = sam_perturb([w], rho=0.5)
    torch.testing.assert_close(e, torch.tensor([0.3, -0.4]))
    torch.testing.assert_close(w.detach(), torch.tensor([3.3, -4.4]))
    sam_restore([w], [e])
    torch.testing.assert_close(w.detach(), torch.tensor([3.0, -4.0]))


def test_interval_two_perturbs_every_other_step():
    model = Quadratic([1.0, 2.0])
    calls: list[int] = []
    state = _state(model, torch.optim.SGD(model.parameters(), lr=0.01), calls)
    sam = SAM(interval=2)
    for _ in range(6):
        _train_step(state, sam)
    assert calls == [0, 2, 4]


def test_trains(tiny_recipe):
    result = fit(tiny_recipe({"sam": {"rho": 0.05}}))
    assert math.isfinite(result.loss)
    assert result.accuracy > 0.2
