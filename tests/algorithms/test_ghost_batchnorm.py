from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from recipesearch.algorithms.ghost_batchnorm import GhostBatchNorm2d, apply_ghost_batchnorm
from recipesearch.train.loop import fit


def _bn(channels: int = 3) -> nn.BatchNorm2d:
    torch.manual_seed(0)
    bn = nn.BatchNorm2d(channels)
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)
    return bn


def _by_hand(bn: nn.BatchNorm2d, x: torch.Tensor, chunks: int) -> torch.Tensor:
    # Plain batch norm on each chunk, with batch statistics (no running stats involved).
    return torch.cat([F.batch_norm(c, None, None, bn.weight, bn.bias, training=True, eps=bn.eps)
                      for c in x.chunk(chunks)])


@pytest.mark.parametrize(("batch", "chunks"), [(64, 4), (70, 3)])  # equal chunks, and a ragged batch
def test_training_output_is_per_chunk_batchnorm(batch: int, chunks: int):
    bn = _bn()
    ghost = GhostBatchNorm2d.from_batchnorm(bn, ghost_batch_size=16 if batch == 64 else 32)
    x = (torch.randn(batch, 3, 5, 5) * 2 + 1).requires_grad_(True)
    out = ghost(x)
    expected = _by_hand(bn, x, chunks)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    # Gradients agree too (autograd through the vectorised statistics).
    grad_ghost = torch.autograd.grad(out.square().sum(), x)[0]
    grad_hand = torch.autograd.grad(expected.square().sum(), x)[0]
    torch.testing.assert_close(grad_ghost, grad_hand, atol=1e-4, rtol=1e-4)


def test_running_stats_take_the_mean_of_the_chunk_statistics():
    ghost = GhostBatchNorm2d(3, ghost_batch_size=8, momentum=0.1)
    x = torch.randn(32, 3, 4, 4) + torch.arange(32.0).view(32, 1, 1, 1)
    ghost(x)
    chunks = x.chunk(4)
    mean = torch.stack([c.mean((0, 2, 3)) for c in chunks]).mean(0)
    var = torch.stack([c.var((0, 2, 3), unbiased=True) for c in chunks]).mean(0)
    torch.testing.assert_close(ghost.running_mean, 0.1 * mean)
    torch.testing.assert_close(ghost.running_var, 0.9 + 0.1 * var)
    assert ghost.num_batches_tracked.item() == 1


def test_eval_and_small_batches_are_exactly_batchnorm():
    bn = _bn()
    bn(torch.randn(16, 3, 4, 4))  # some running statistics
    ghost = GhostBatchNorm2d.from_batchnorm(bn, ghost_batch_size=4)
    x = torch.randn(16, 3, 4, 4)
    torch.testing.assert_close(ghost.eval()(x), bn.eval()(x))
    small = torch.randn(4, 3, 4, 4)  # one ghost batch: plain BN in training too
    torch.testing.assert_close(ghost.train()(small), bn.train()(small))


def test_channels_last_input_keeps_its_layout():
    ghost = GhostBatchNorm2d(3, ghost_batch_size=4)
    x = torch.randn(8, 3, 4, 4).contiguous(memory_format=torch.channels_last)
    out = ghost(x)
    assert out.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(out, _by_hand(ghost, x, 2))


def test_replaces_every_batchnorm():
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.Sequential(nn.BatchNorm2d(4)))
    model, count = apply_ghost_batchnorm(model, 8)
    assert count == 2 and all(isinstance(m, GhostBatchNorm2d) for m in (model[1], model[2][0]))


def test_trains(tiny_recipe):
    result = fit(tiny_recipe({"ghost_batchnorm": {"ghost_batch_size": 16}}))
    assert math.isfinite(result.loss)
    assert result.accuracy > 0.2


def test_new_modules_follow_the_model_device():
    with torch.device("meta"):
        model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4))
    model, _ = apply_ghost_batchnorm(model, 8)
    assert {t.device.type for t in (*model.parameters(), *model.buffers())} == {"meta"}
