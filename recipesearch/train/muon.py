"""Muon: Nesterov momentum whose step for each hidden weight matrix is orthogonalised by Newton–Schulz.

Jordan et al. 2024, "Muon: An optimizer for hidden layers in neural networks" (kellerjordan.github.io/
posts/muon; ``KellerJordan/Muon`` ``muon.py``: ``zeropower_via_newtonschulz5``, ``muon_update``); on
CIFAR-10, ``KellerJordan/cifar10-airbench`` ``airbench94_muon.py`` (94 % in 2.59 s on an A100).

Who takes what (``muon_params``): every parameter of 2 or more dimensions (conv filters flattened to
[out, in * kh * kw]) except the first and the last, i.e. the input layer and the classifier head; those and
every 1-D parameter (BN, biases) go to the ``rest`` optimizer (``DecoupledSGDW`` or AdamW), stepped by the
same ``Muon.step``. muon.py says the same (input embedding, output layer, gains and biases to AdamW);
airbench94_muon.py gives Muon every trainable 4-D filter: its first conv is a frozen whitening layer, so
its first *trained* conv is Muon's, and its head goes to SGD. With ``patch_whitening`` on (first conv frozen)
this module does the same, because "first" is counted over all matrices, frozen ones included.

Defaults (``OptimizerSpec``) and where they come from; differences are marked:
- Newton–Schulz quintic with (a, b, c) = (3.4445, -4.7750, 2.0315) on the matrix scaled to Frobenius norm
  1: both references. ``ns_steps`` 5: muon.py; airbench94_muon.py runs 3 (its ``steps=3`` default, which
  ``Muon.step`` does not override).
- ``muon_lr`` 0.24, ``muon_momentum`` 0.6, Nesterov: airbench94_muon.py (muon.py: lr 0.02, momentum 0.95,
  for transformers whose weights are not renormalised).
- ``muon_normalize``: airbench94_muon.py rescales each weight to Frobenius norm sqrt(out_channels) before
  its step (filters of unit L2 norm on average), so the LR acts as an angle; muon.py does not.
- Scale max(1, rows / cols) ** 0.5 on the update: muon.py; airbench94_muon.py has none. Here rows and cols
  are the flattened matrix's; muon.py reads ``grad.size(-2) / grad.size(-1)``, which for a 4-D filter is
  kh / kw (1 for square kernels). For conv filters rows <= cols almost always, so the factor is 1.
- Momentum in SGD's form (buf = m * buf + g; Nesterov g + m * buf) as in airbench94_muon.py and
  ``torch.optim.SGD``; muon.py's lerp form is the same direction times (1 - m), which the normalisation
  inside Newton–Schulz removes.
- Weight decay: decoupled as everywhere in this library (weight *= 1 - weight_decay * lr / peak_lr); muon.py
  multiplies by 1 - lr * weight_decay; airbench94_muon.py decays no filter (renormalised each step anyway,
  which makes decay a no-op here too when ``muon_normalize`` is on).
- Precision: both references run the iteration in bf16 (GPU). ``ns_precision: auto`` keeps bf16 on CUDA and
  uses fp32 elsewhere: measured on this project's 2-core AMD EPYC (avx512_bf16, 2 threads), one 5-step
  iteration of a 16x144 / 64x576 / 512x4608 matrix took 0.15 / 0.67 / 153 ms in fp32 against 0.31 / 0.65 /
  65 ms in bf16, and a whole Muon step of digits' resnet8 (7 matrices, at most 64x576; 1 thread) 3.2 ms in
  fp32 against 4.6 ms in bf16 (SGD's: 0.8 ms; forward + backward of a batch of 64: 25 ms). bf16 pays from
  about 128x1152 on (1.7 against 3.1 ms: resnet9-sized layers; set ``ns_precision: bf16`` there), on CPUs
  that have bf16 instructions; others emulate it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import Tensor, nn

# Quintic coefficients chosen (muon.py) to maximise the slope at 0: 5 steps map every singular value
# sigma >= 2e-3 * ||G||_F into [0.68, 1.21] (>= 1.1e-3: [0.51, 1.21]) rather than to exactly 1 (muon.py:
# "S' ~ Uniform(0.5, 1.5)"); 3 steps (airbench94_muon.py) need sigma >= 2e-2 * ||G||_F for that.
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def newton_schulz(G: Tensor, steps: int = 5, dtype: torch.dtype = torch.float32, eps: float = 1e-7) -> Tensor:
    """Approximately U V^T for G = U S V^T (2-D): the nearest semi-orthogonal matrix, in ``dtype``.

    The matrix is divided by its Frobenius norm (so every singular value is <= 1), then each step applies
    X <- a X + (b A + c A^2) X with A = X X^T, i.e. the odd polynomial a s + b s^3 + c s^5 to every
    singular value s. The wide orientation (rows <= cols) keeps A the smaller Gram matrix.
    """
    if G.ndim != 2:
        raise ValueError(f"newton_schulz needs a matrix, got shape {tuple(G.shape)}")
    a, b, c = NS_COEFFICIENTS
    X = G.to(dtype)
    tall = G.size(0) > G.size(1)
    if tall:
        X = X.T
    X = X / (X.norm() + eps)
    for _ in range(steps):
        A = X @ X.T
        X = a * X + (b * A + c * A @ A) @ X
    return X.T if tall else X


def muon_update(grad: Tensor, buf: Tensor, momentum: float, nesterov: bool = True, ns_steps: int = 5,
                dtype: torch.dtype = torch.float32) -> Tensor:
    """Update buf in place with grad; return the orthogonalised (Nesterov) momentum, shaped like ``grad``.

    A conv filter [out, in, kh, kw] is orthogonalised as the matrix [out, in * kh * kw]; the result is
    scaled by max(1, rows / cols) ** 0.5 so a tall matrix's update has the RMS of a wide one's.
    """
    buf.mul_(momentum).add_(grad)
    direction = grad.add(buf, alpha=momentum) if nesterov else buf
    matrix = direction.reshape(len(direction), -1)
    update = newton_schulz(matrix, ns_steps, dtype)
    update = update * max(1.0, matrix.size(0) / matrix.size(1)) ** 0.5
    return update.to(grad.dtype).view_as(grad)


def muon_params(model: nn.Module) -> list[nn.Parameter]:
    """The trainable weights Muon takes: every >= 2-D parameter but the first and the last (in/out layers).

    Order is registration order, which is the forward order in every model of the registry (stem first,
    ``fc`` last). First and last are counted over frozen parameters too (see the module docstring).
    """
    matrices = [p for p in model.parameters() if p.ndim >= 2]
    return [p for p in matrices[1:-1] if p.requires_grad]


class Muon(torch.optim.Optimizer):
    """Muon for its own parameters; the ``rest`` optimizer's groups are appended to ``param_groups``.

    The loop sees one optimizer: ``set_lr`` scales every group's ``initial_lr`` (Muon's is ``lr``, the
    rest keep theirs), ``zero_grad`` and a GradScaler's ``unscale_`` reach every parameter, and ``step``
    steps both. The rest's momentum/Adam state stays in ``rest.state``.
    """

    def __init__(self, params: Iterable[Tensor], lr: float, momentum: float = 0.6, nesterov: bool = True,
                 ns_steps: int = 5, weight_decay: float = 0.0, normalize: bool = True,
                 ns_dtype: torch.dtype | None = None, rest: torch.optim.Optimizer | None = None):
        defaults = dict(lr=lr, momentum=momentum, nesterov=nesterov, ns_steps=ns_steps, decoupled_wd=weight_decay,
                        normalize=normalize, ns_dtype=ns_dtype, initial_lr=lr, muon=True)
        super().__init__([{"params": list(params)}], defaults)
        self.rest = rest
        if rest is not None:
            self.param_groups.extend(rest.param_groups)  # the same dicts: an LR set here is the rest's LR

    def __getstate__(self) -> dict:
        # torch's Optimizer pickles its defaults, state and groups only; a checkpoint (train/checkpoint.py)
        # needs the rest optimizer too (its groups are the same dicts as ours, pickled once)
        return {**super().__getstate__(), "rest": self.rest}

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            if group.get("muon"):
                self._muon_step(group)
        if self.rest is not None:
            self.rest.step()
        return loss

    def _muon_step(self, group: dict) -> None:
        wd = group["decoupled_wd"] * group["lr"] / group["initial_lr"]
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = torch.zeros_like(p.grad)
            dtype = group["ns_dtype"] or (torch.bfloat16 if p.is_cuda else torch.float32)
            update = muon_update(p.grad, state["momentum_buffer"], group["momentum"], group["nesterov"],
                                 group["ns_steps"], dtype)
            if wd:
                p.mul_(1 - wd)
            if group["normalize"]:
                p.mul_(len(p) ** 0.5 / p.norm().clamp_min(1e-12))
            p.add_(update, alpha=-group["lr"])
