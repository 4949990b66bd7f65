"""Optimizers of a strong baseline: SGD with Nesterov momentum and decoupled weight decay, or AdamW."""
from __future__ import annotations

import torch
from torch import nn

from recipesearch.recipe import OptimizerSpec


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


def param_groups(model: nn.Module, decay_norm_and_bias: bool) -> list[dict]:
    """Split parameters so BN/bias weights (1-D) escape weight decay unless asked otherwise."""
    decay, no_decay = [], []
    for p in model.parameters():
        if not p.requires_grad:
            continue
        (decay if decay_norm_and_bias or p.ndim > 1 else no_decay).append(p)
    groups = [{"params": decay, "decay": True}]
    if no_decay:
        groups.append({"params": no_decay, "decay": False})
    return groups


def build_optimizer(spec: OptimizerSpec, model: nn.Module) -> torch.optim.Optimizer:
    groups = param_groups(model, spec.decay_norm_and_bias)
    if spec.name == "sgd":
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
