"""Reproduction of airbench94 from this library's parts (issue 30, GPU item 5), and torch.compile on and off.

``recipes/cifar10_airbench94.yaml`` (all training images: ``data.val_fraction: 0``, as airbench trains) against
airbench's own ``train94`` on the same GPU and images, at each of ``epochs`` (both sides the same counts; ours
through its budget, so its schedule dilates as in a search), ``seeds`` fresh seeds per side, sides alternating
seed by seed (``gpu_airbench.alternate``), after an untimed 1-epoch warm-up on each side. Per side and epoch
count: median test accuracy and train seconds. ``time_to_94_ratio``: our time to 94 % over airbench's on the
curves of medians (log-time interpolation between epoch counts, never extrapolated); ``max_accuracy_gap_pp``:
the largest |ours - airbench| of the median accuracies at an epoch count. Goals: ratio <= 1.10, gap <= 0.3 pp.

torch.compile (``compile``): our recipe at ``compile_epochs``, ``compile_seeds`` seeds, without and with the
``torch_compile`` method (mode default; and ``reduce-overhead``, CUDA graphs, where the recipe allows them: no
method that changes a batch's shape between steps), off and on interleaved per seed, after one untimed compiled
1-epoch run per mode (its train seconds, compile included, are recorded: a search pays them in every trial).
A mode whose warm-up would not fit the time left is skipped and says so.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from bench.common import fit_or_nan, summarize
from bench.gpu_airbench import AirbenchChild, AirbenchUnavailable, alternate, at_epochs

SOURCE = "bench:gpu:reproduction"
GOALS = {"time_to_94_ratio": 1.10, "max_accuracy_gap_pp": 0.3}
# Methods that change a batch's shape from step to step: a CUDA graph replays one shape.
SHAPE_CHANGING = ("progressive_resizing", "colout", "selective_backprop")
SEED_OFFSET = 9000  # fresh seeds, apart from the search's, §5's (1000 + k) and the other GPU sections'


def cuda_graphs_problem(recipe: dict[str, Any], cuda: bool) -> str | None:
    """Why CUDA graphs cannot capture this recipe's step here (None: they can)."""
    if not cuda:
        return "CUDA graphs need CUDA"
    bad = [a for a in recipe.get("algorithms") or {} if a in SHAPE_CHANGING]
    if bad:
        return f"{', '.join(bad)} change(s) the batch's shape between steps: a CUDA graph replays one shape"
    return None


def reproduction(ours: dict[str, Any], child: AirbenchChild | None, child_reason: str | None, sizes: dict[str, Any],
                 cuda: bool, left: Callable[[], float], log: Callable[[str], None] = print) -> dict[str, Any]:
    """The side by side, then the compile arms (module docstring)."""
    seeds = [SEED_OFFSET + s for s in range(sizes["seeds"])]
    fit_or_nan(at_epochs(ours, 1.0, SEED_OFFSET - 1), SOURCE)  # warm-up (the child warmed up on its own)
    info: dict[str, Any] = {}
    if child is not None:
        try:
            info = child.wait_ready()
        except AirbenchUnavailable as exc:
            child_reason, child = f"airbench's child did not start: {exc}", None
    compile_reserve = sizes.get("compile_reserve", 0.0)

    def ours_fit(epochs: float, seed: int) -> dict[str, Any]:
        return fit_or_nan(at_epochs(ours, epochs, seed), SOURCE)

    main = alternate(ours_fit, child, list(sizes["epochs"]), seeds, lambda: left() - compile_reserve, log)
    out = {**main, "airbench": {k: v for k, v in info.items() if k != "ready"} if child else {"skipped": child_reason},
           "goals": dict(GOALS)}
    out["met"] = {k: bool(out[k] <= goal) if math.isfinite(out[k]) else None for k, goal in GOALS.items()}
    out["compile"] = compile_arms(ours, sizes, cuda, left, log)
    return out


def compile_arms(ours: dict[str, Any], sizes: dict[str, Any], cuda: bool, left: Callable[[], float],
                 log: Callable[[str], None] = print) -> dict[str, Any]:
    """Per mode: the warm-up's seconds, then off / on per seed at ``compile_epochs``; on / off time ratios."""
    epochs, modes = float(sizes["compile_epochs"]), dict(sizes["compile_modes"])
    out: dict[str, Any] = {"epochs": epochs, "modes": {}}
    estimate = float(sizes.get("compile_estimate", 60.0))
    for label, params in modes.items():
        problem = cuda_graphs_problem(ours, cuda) if params.get("mode") == "reduce-overhead" else None
        if problem is None and estimate > left():
            problem = f"out of time: a compile takes about {estimate:.0f} s and {max(left(), 0):.0f} s were left"
        if problem is not None:
            out["modes"][label] = {"params": params, "skipped": problem}
            log(f"  {label}: skipped ({problem})")
            continue
        # an evaluation batch that divides the test set: a ragged last batch would be one more compile
        compiled = {**ours, "algorithms": {**ours["algorithms"], "torch_compile": params},
                    "eval_batch_size": sizes.get("compile_eval_batch", ours.get("eval_batch_size", 1024))}
        t0 = time.perf_counter()
        warm = fit_or_nan(at_epochs(compiled, 1.0, SEED_OFFSET - 2), SOURCE)
        estimate = time.perf_counter() - t0  # the next mode compiles as long, less what the kernel cache saves
        runs = []
        for i in range(sizes["compile_seeds"]):
            if runs and 2 * max((r["train_seconds"] for r in runs if math.isfinite(r["train_seconds"])),
                                default=0.0) > left():
                break
            seed = SEED_OFFSET + 500 + i
            for arm in (("off", "on") if i % 2 == 0 else ("on", "off")):
                rec = fit_or_nan(at_epochs(compiled if arm == "on" else ours, epochs, seed), SOURCE)
                runs.append({"seed": seed, "arm": arm, **rec})
        ratios = [on["train_seconds"] / off["train_seconds"] for on in runs if on["arm"] == "on"
                  for off in runs if off["arm"] == "off" and off["seed"] == on["seed"]]
        out["modes"][label] = {"params": params, "warm_up": warm, "runs": runs, "on_over_off": summarize(ratios),
                               "errors": sorted({r["error"] for r in [warm, *runs] if r.get("error")})}
        log(f"  {label}: first (compiling) 1-epoch run {warm['train_seconds']:.1f} s; on/off train time "
            f"{out['modes'][label]['on_over_off']['median']:.3f}" + (f" ({warm['error']})" if warm.get("error") else ""))
    return out
