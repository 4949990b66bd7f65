"""Muon: the step of each hidden weight matrix is near-orthogonal, the rest takes the fallback optimizer,
the LR schedule scales Muon's LR, bad fields are one-line ConfigErrors, and it trains digits alone."""
from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from recipesearch.errors import ConfigError
from recipesearch.models import create_model
from recipesearch.recipe import OptimizerSpec, load_recipe
from recipesearch.train.loop import fit
from recipesearch.train.muon import NS_COEFFICIENTS, Muon, muon_params, newton_schulz
from recipesearch.train.optim import DecoupledSGDW, build_optimizer, set_lr

DIGITS = Path(__file__).parents[2] / "recipes" / "digits_baseline.yaml"
# Where 5 quintic steps put a singular value s >= 2e-3 * ||G||_F (test_band_of_the_scalar_map): [0.68, 1.21],
# inside muon.py's "S' ~ Uniform(0.5, 1.5)"; the margin is for fp32 rounding and the test matrices' spread.
BAND = (0.6, 1.25)


def _quintic(x: np.ndarray, steps: int) -> np.ndarray:
    a, b, c = NS_COEFFICIENTS
    for _ in range(steps):
        x = a * x + b * x**3 + c * x**5
    return x


def test_band_of_the_scalar_map():
    # Newton-Schulz acts on each singular value (divided by ||G||_F) as the odd quintic, applied 5 times.
    y = _quintic(np.logspace(np.log10(2e-3), 0, 4001), 5)
    assert y.min() == pytest.approx(0.682, abs=1e-3) and y.max() == pytest.approx(1.202, abs=1e-3)
    assert BAND[0] < y.min() and y.max() < BAND[1]
    # Smaller singular values are still on their way up: 1.1e-3 reaches 0.51, 1e-3 only 0.47.
    assert _quintic(np.array([1.1e-3, 1e-3]), 5) == pytest.approx([0.51, 0.47], abs=0.01)


@pytest.mark.parametrize("shape", [(16, 144), (64, 32), (10, 10)])
def test_newton_schulz_maps_every_singular_value_into_the_band(shape):
    gen = torch.Generator().manual_seed(0)
    rows, cols = shape
    k = min(shape)
    u, _ = torch.linalg.qr(torch.randn(rows, k, generator=gen))
    v, _ = torch.linalg.qr(torch.randn(cols, k, generator=gen))
    s = torch.logspace(-1.5, 0, k)  # condition number ~30
    G = u @ torch.diag(s) @ v.T
    X = newton_schulz(G, steps=5)
    assert X.shape == G.shape
    sv = torch.linalg.svdvals(X)
    assert BAND[0] <= sv.min() and sv.max() <= BAND[1]
    # Same singular vectors: X is (near) the polar factor U V^T.
    polar = u @ v.T
    assert F.cosine_similarity(X.flatten(), polar.flatten(), dim=0) > 0.97


def test_bf16_iteration_stays_in_the_band():
    G = torch.randn(32, 288, generator=torch.Generator().manual_seed(1))
    sv = torch.linalg.svdvals(newton_schulz(G, 5, torch.bfloat16).float())
    assert sv.min() >= 0.5 and sv.max() <= 1.5


def _cnn_with_grads(seed: int = 0):
    torch.manual_seed(seed)
    model = create_model("cnn", num_classes=10, in_channels=1, image_size=16, width=8)
    x, y = torch.randn(64, 1, 16, 16), torch.randint(0, 10, (64,))
    F.cross_entropy(model(x), y).backward()
    return model


def test_each_weight_matrix_steps_near_orthogonally():
    model = _cnn_with_grads()
    spec = OptimizerSpec(name="muon", muon_lr=0.1, weight_decay=0.0, muon_normalize=False)
    opt = build_optimizer(spec, model)
    matrices = muon_params(model)
    assert [p.shape for p in matrices] == [(16, 8, 3, 3), (32, 16, 3, 3)]  # the middle convs
    before = [p.detach().clone() for p in matrices]
    opt.step()
    for p, w0 in zip(matrices, before):
        update = ((w0 - p.detach()) / spec.muon_lr).reshape(len(p), -1)
        sv = torch.linalg.svdvals(update)
        assert BAND[0] <= sv.min() and sv.max() <= BAND[1], sv
        grad = p.grad.reshape(len(p), -1)  # first step: the Nesterov momentum is (1 + m) * grad
        u, _, vh = torch.linalg.svd(grad, full_matrices=False)
        assert F.cosine_similarity(update.flatten(), (u @ vh).flatten(), dim=0) > 0.97


def test_first_last_and_1d_params_take_the_fallback_optimizer():
    model = _cnn_with_grads()
    twin = copy.deepcopy(model)
    for p, q in zip(model.parameters(), twin.parameters()):
        q.grad = p.grad.clone()  # deepcopy leaves .grad behind
    opt = build_optimizer(OptimizerSpec(name="muon", lr=0.05, momentum=0.9, weight_decay=5e-4), model)
    assert isinstance(opt, Muon) and isinstance(opt.rest, DecoupledSGDW)
    taken = {id(p) for p in muon_params(model)}
    rest = [n for n, p in model.named_parameters() if id(p) not in taken]
    assert "features.0.weight" in rest and "fc.weight" in rest and "fc.bias" in rest
    assert all(p.ndim == 1 for n, p in model.named_parameters() if n in rest and n not in
               ("features.0.weight", "fc.weight"))
    # Every parameter is in exactly one group of the one optimizer the loop sees.
    grouped = [id(p) for g in opt.param_groups for p in g["params"]]
    assert sorted(grouped) == sorted(id(p) for p in model.parameters())
    # The rest moves exactly as under the plain SGD optimizer with the same fields.
    sgd = build_optimizer(OptimizerSpec(name="sgd", lr=0.05, momentum=0.9, weight_decay=5e-4), twin)
    opt.step()
    sgd.step()
    params, twins = dict(model.named_parameters()), dict(twin.named_parameters())
    for n in rest:
        torch.testing.assert_close(params[n], twins[n], rtol=0, atol=0)
    assert not torch.equal(params["features.4.weight"], twins["features.4.weight"])


def test_adamw_for_the_rest():
    model = _cnn_with_grads()
    opt = build_optimizer(OptimizerSpec(name="muon", muon_rest="adamw", lr=1e-3), model)
    assert isinstance(opt.rest, torch.optim.AdamW)
    opt.step()
    assert all(g["initial_lr"] == pytest.approx(1e-3) for g in opt.rest.param_groups)


def test_schedule_scales_muon_lr_like_the_others():
    steps = []
    for factor in (1.0, 0.5):
        model = _cnn_with_grads()
        opt = build_optimizer(OptimizerSpec(name="muon", lr=0.05, muon_lr=0.2, weight_decay=0.0,
                                            muon_normalize=False), model)
        set_lr(opt, factor)
        lrs = sorted(g["lr"] for g in opt.param_groups)
        assert lrs[0] == pytest.approx(0.05 * factor) and lrs[-1] == pytest.approx(0.2 * factor)
        w = model.features[4].weight
        w0 = w.detach().clone()
        opt.step()
        steps.append(w0 - w.detach())
    torch.testing.assert_close(steps[1], 0.5 * steps[0])


def test_normalize_resets_filter_norm_and_decay_follows_schedule():
    model = _cnn_with_grads()
    opt = build_optimizer(OptimizerSpec(name="muon", muon_normalize=True), model)
    w = model.features[4].weight
    with torch.no_grad():
        w.mul_(7.0)
    opt.step()
    # Renormalised to sqrt(out_channels) before a step of norm <= muon_lr * ||update||_F.
    expected = math.sqrt(len(w))
    assert abs(w.norm().item() - expected) < 0.24 * 1.25 * math.sqrt(len(w)) + 1e-6
    assert abs(w.norm().item() - expected) < abs(7.0 * expected - expected) / 5


def test_closure_and_zero_grad_cover_every_param():
    model = _cnn_with_grads()
    opt = build_optimizer(OptimizerSpec(name="muon"), model)
    assert opt.step(closure=lambda: 1.5) == 1.5
    opt.zero_grad(set_to_none=True)
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.parametrize("field, value, fragment", [
    ("muon_lr", 0, "greater than 0"),
    ("muon_momentum", 1.0, "less than 1"),
    ("ns_steps", 0, "greater than or equal to 1"),
    ("muon_rest", "lion", "allowed:"),
    ("ns_precision", "fp8", "allowed:"),
])
def test_bad_field_is_a_one_line_config_error(tiny_recipe, field, value, fragment):
    with pytest.raises(ConfigError) as info:
        tiny_recipe(optimizer={"name": "muon", field: value})
    assert info.value.field == f"optimizer.{field}"
    assert fragment in info.value.message and "\n" not in str(info.value)


def test_nesterov_without_momentum_is_refused_for_the_sgd_rest(tiny_recipe):
    with pytest.raises(ConfigError, match="nesterov needs momentum"):
        tiny_recipe(optimizer={"name": "muon", "momentum": 0.0, "nesterov": True})
    tiny_recipe(optimizer={"name": "muon", "muon_rest": "adamw", "momentum": 0.0, "nesterov": True})


def test_muon_fields_leave_other_recipes_ids_alone(tiny_recipe):
    sgd = tiny_recipe()
    assert "muon_lr" not in sgd.to_dict()["optimizer"]
    assert tiny_recipe(optimizer={"muon_lr": 0.5}).id() == sgd.id()  # no effect under sgd: same recipe
    muon = tiny_recipe(optimizer={"name": "muon"})
    assert muon.to_dict()["optimizer"]["muon_lr"] == 0.24 and muon.id() != sgd.id()
    assert tiny_recipe(optimizer={"name": "muon", "muon_lr": 0.5}).id() != muon.id()


@pytest.mark.parametrize("extra", [
    {"algorithms": {"sam": {}}},
    {"algorithms": {"gradient_clipping": {}}, "precision": "fp16"},  # GradScaler unscales every group
    {"algorithms": {"layer_freezing": {}}},
    {"algorithms": {"channels_last": {}}},  # channels_last filters flatten in logical (out, in, kh, kw) order
])
def test_composes_with_methods_that_touch_the_optimizer(tiny_recipe, extra):
    result = fit(tiny_recipe(optimizer={"name": "muon"}, max_duration=0.5, **extra))
    assert math.isfinite(result.loss) and result.accuracy > 0.2


def test_trains_digits_alone_to_95_percent():
    # recipes/digits_baseline.yaml (resnet8, 8 epochs), Muon with its defaults; one thread (the suite runs
    # beside other work): ~5 s.
    recipe = load_recipe(DIGITS).with_overrides({"optimizer.name": "muon", "device": "cpu", "threads": 1})
    result = fit(recipe)
    assert result.accuracy >= 0.95, result
