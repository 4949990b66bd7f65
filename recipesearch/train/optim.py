"""Optimizers of a strong baseline: SGD with Nesterov momentum and decoupled weight decay, or AdamW; or Muon
for the hidden weight matrices with one of those for the rest (``recipesearch/train/muon.py``); or the schedule-free
SGD and AdamW (``recipesearch/train/schedule_free.py``)."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import nn

from recipesearch.recipe import OptimizerSpec
from recipesearch.train import schedule_free
from recipesearch.train.muon import Muon, muon_params

_NS_DTYPES = {"auto": None, "bf16": torch.bfloat16, "fp32": torch.float32}


@dataclass(frozen=True)
class OptimizerInfo:
    """What ``recipesearch algorithms`` lists for ``optimizer.name``: the fields it reads, and its source."""

    description: str
    citation: str
    fields: tuple[str, ...]


OPTIMIZERS: dict[str, OptimizerInfo] = {
    "sgd": OptimizerInfo("SGD, Nesterov momentum, decoupled weight decay that follows the schedule (the baseline)",
                         "Loshchilov & Hutter 2019, Decoupled Weight Decay Regularization; Composer's DecoupledSGDW",
                         ("lr", "momentum", "nesterov", "weight_decay", "decay_norm_and_bias")),
    "adamw": OptimizerInfo("Adam with decoupled weight decay",
                           "Loshchilov & Hutter 2019, Decoupled Weight Decay Regularization",
                           ("lr", "betas", "weight_decay", "decay_norm_and_bias")),
    "sgd_schedulefree": OptimizerInfo("Schedule-free SGD: momentum as an interpolation with a running average of "
                                      "the weights, evaluated at the average; the schedule's decay is not applied",
                                      "Defazio et al. 2024, The Road Less Scheduled; the schedulefree package",
                                      ("lr", "momentum", "weight_decay", "decay_norm_and_bias")),
    "adamw_schedulefree": OptimizerInfo("Schedule-free AdamW (AlgoPerf 2024 self-tuning track's winner): as above, "
                                        "with Adam's second moments",
                                        "Defazio et al. 2024, The Road Less Scheduled; the schedulefree package",
                                        ("lr", "betas", "weight_decay", "decay_norm_and_bias")),
    "muon": OptimizerInfo("Nesterov momentum orthogonalised by Newton-Schulz for hidden conv/linear weights; "
                          "muon_rest (sgd/adamw, fields above) for first/last layers and 1-D params",
                          "Jordan et al. 2024, Muon: An optimizer for hidden layers in neural networks; "
                          "airbench94_muon.py",
                          ("muon_lr", "muon_momentum", "ns_steps", "muon_rest", "muon_normalize", "ns_precision")),
}


class DecoupledSGDW(torch.optim.SGD):
    """SGD whose weight decay is decoupled from the gradient (Loshchilov & Hutter 2019).

    Each step first shrinks weights by ``weight_decay * lr / initial_lr`` (Composer's convention): the
    decay follows the schedule but not the LR's magnitude, so tuning the LR does not retune the decay.
    """

    def __init__(self, params, lr: float, momentum: float, nesterov: bool, weight_decay: float):
        super().__init__(params, lr=lr, momentum=momentum, nesterov=nesterov, weight_decay=0.0)
        for group in self.param_groups:
            group["decoupled_wd"] = weight_decay if group.get("decay", True) else 0.0
            group["initial_lr"] = lr

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            wd = group["decoupled_wd"]
            if wd:
                params = [p for p in group["params"] if p.grad is not None]
                if params:
                    torch._foreach_mul_(params, 1 - wd * group["lr"] / group["initial_lr"])
        return super().step(closure)


def param_groups(model: nn.Module, decay_norm_and_bias: bool, exclude: Iterable[nn.Parameter] = ()) -> list[dict]:
    """Split parameters so BN/bias weights (1-D) escape weight decay unless asked otherwise.

    ``exclude``: parameters another optimizer takes (Muon's matrices).
    """
    taken = {id(p) for p in exclude}
    decay, no_decay = [], []
    for p in model.parameters():
        if not p.requires_grad or id(p) in taken:
            continue
        (decay if decay_norm_and_bias or p.ndim > 1 else no_decay).append(p)
    groups = [{"params": decay, "decay": True}]
    if no_decay:
        groups.append({"params": no_decay, "decay": False})
    return groups


def build_optimizer(spec: OptimizerSpec, model: nn.Module) -> torch.optim.Optimizer:
    if spec.name == "muon":
        matrices = muon_params(model)
        rest = _elementwise(spec.muon_rest, spec, param_groups(model, spec.decay_norm_and_bias, exclude=matrices))
        return Muon(matrices, lr=spec.muon_lr, momentum=spec.muon_momentum, nesterov=True, ns_steps=spec.ns_steps,
                    weight_decay=spec.weight_decay, normalize=spec.muon_normalize,
                    ns_dtype=_NS_DTYPES[spec.ns_precision], rest=rest)
    if spec.name in schedule_free.NAMES:
        return schedule_free.build(spec.name, param_groups(model, spec.decay_norm_and_bias), spec.lr, spec.momentum,
                                   spec.betas, spec.weight_decay)
    return _elementwise(spec.name, spec, param_groups(model, spec.decay_norm_and_bias))


def _elementwise(name: str, spec: OptimizerSpec, groups: list[dict]) -> torch.optim.Optimizer:
    if name == "sgd":
        return DecoupledSGDW(groups, spec.lr, spec.momentum, spec.nesterov, spec.weight_decay)
    for g in groups:
        g["weight_decay"] = spec.weight_decay if g["decay"] else 0.0
    opt = torch.optim.AdamW(groups, lr=spec.lr, betas=spec.betas)
    for g in opt.param_groups:
        g["initial_lr"] = spec.lr
    return opt


def set_lr(optimizer: torch.optim.Optimizer, factor: float) -> None:
    for g in optimizer.param_groups:
        g["lr"] = g["initial_lr"] * factor
