"""The Trainer against a bare PyTorch loop on the GPU (issue 30, GPU item 4): what the loop costs where a step is
short, and what 10 methods' hooks that do nothing at that step add.

Method: the same net (ResNet-9 and airbench94), bf16 autocast, channels_last (model and batches), the same
device-resident uint8 images with the same per-batch crop, flip and normalise (``recipesearch.data.augment``,
random numbers from a generator on the device), the same optimizer (``build_optimizer``: Nesterov SGD) and
per-step LR (``LRSchedule``), the same number of steps. Arms: ``bare`` (written out below, top to bottom),
``trainer`` (``Trainer.train()``, the recipe's only method ``channels_last``) and ``trainer+10 hooks`` (the same
plus ``noop_hooks(10)``: one hook at each per-step event, alternately declining in ``match`` and returning at
once from ``apply``, as EMA between updates and layer freezing before its start do). Each arm is run once
untimed first; then ``repeats`` rounds, arms in rotated order. Timed: the training steps only (model, optimizer
and loader built before), between CUDA events after a device sync (``perf_counter`` on the CPU stand-in).
Ratio: bare's time / the arm's time in the same round (= images/s ratio), median over rounds.
Goals: trainer / bare >= 0.97 and trainer+10 hooks / bare >= 0.95 (ResNet-9: ``trainer_vs_bare``, ``with_hooks``).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from bench.common import summarize
from bench.trainer_loop_overhead import noop_hooks  # the §1 arms' hooks: the same no-op methods

ARMS = ("bare", "trainer", "trainer+10 hooks")
GOALS = {"trainer_vs_bare": 0.97, "with_hooks": 0.95}
HEADLINE_NET = "resnet9"


class Timer:
    """Seconds of the work inside ``with``: CUDA events after a device sync on CUDA, ``perf_counter`` elsewhere."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.seconds = float("nan")

    def __enter__(self) -> Timer:
        if self.cuda:
            torch.cuda.synchronize()
            self._start, self._end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            self._start.record()
        else:
            self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.cuda:
            self._end.record()
            self._end.synchronize()
            self.seconds = self._start.elapsed_time(self._end) / 1000
        else:
            self.seconds = time.perf_counter() - self._t0


def recipe(model: dict[str, Any], data: dict[str, Any], steps: int, per_epoch: int, batch: int, device: str,
           precision: str) -> Any:
    from recipesearch.recipe import recipe_from_dict

    return recipe_from_dict({
        "name": f"overhead-{model['name']}", "model": dict(model), "data": dict(data),
        "optimizer": {"name": "sgd", "lr": 0.2, "momentum": 0.9, "nesterov": True, "weight_decay": 5e-4},
        "schedule": {"name": "onecycle", "pct_start": 0.25, "final_lr_factor": 0.1},
        "max_duration": steps / per_epoch, "batch_size": batch, "seed": 0, "device": device, "precision": precision,
        "algorithms": {"channels_last": {}},
    }, source="bench:gpu:overhead")


def bare_loop(rec: Any, bundle: Any, device: torch.device) -> Callable[[], int]:
    """The bare loop of ``rec`` over ``bundle``, built (model, optimizer, generator) and returned ready to run:
    calling it trains every step and returns the images it trained on."""
    from recipesearch.data.augment import normalize_params, random_crop, random_hflip
    from recipesearch.models import create_model
    from recipesearch.train.optim import build_optimizer
    from recipesearch.train.schedule import LRSchedule

    torch.manual_seed(rec.seed)
    gen = torch.Generator(device=device).manual_seed(rec.seed)
    model = create_model(rec.model.name, num_classes=bundle.num_classes, in_channels=bundle.channels,
                         image_size=bundle.image_size, **rec.model.kwargs).to(device)
    model = model.to(memory_format=torch.channels_last)
    opt = build_optimizer(rec.optimizer, model)
    images, labels = bundle.train.images, bundle.train.labels
    n, bs = len(labels), rec.batch_size
    per_epoch = max(n // bs, 1)
    total = max(1, round(rec.epochs * per_epoch))
    schedule = LRSchedule(rec.schedule, per_epoch, total, rec.budget)
    scale, bias = normalize_params(bundle.mean, bundle.std, device)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(rec.precision)

    def run() -> int:
        model.train()
        step = 0
        while step < total:
            order = torch.randperm(n, generator=gen, device=device)
            for i in range(per_epoch):
                if step == total:
                    break
                idx = order[i * bs:(i + 1) * bs]
                x = random_crop(images[idx], bundle.crop_padding, gen)
                if bundle.hflip:
                    x = random_hflip(x, 0.5, gen)
                x = torch.addcmul(bias, x.float(), scale).contiguous(memory_format=torch.channels_last)
                with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
                    loss = F.cross_entropy(model(x), labels[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                for g in opt.param_groups:
                    g["lr"] = g["initial_lr"] * schedule.factor(step)
                opt.step()
                step += 1
        return step * bs

    return run


def trainer_run(rec: Any, bundle: Any, hooks: int) -> Callable[[], int]:
    from recipesearch.train.loop import Trainer

    trainer = Trainer(rec, data=bundle)
    if hooks:
        trainer.set_algorithms([*trainer.algorithms, *noop_hooks(hooks)])

    def run() -> int:
        trainer.train()
        return trainer.state.samples_seen

    return run


def build(arm: str, rec: Any, bundle: Any, device: torch.device) -> Callable[[], int]:
    return bare_loop(rec, bundle, device) if arm == "bare" else trainer_run(rec, bundle, 10 if "hooks" in arm else 0)


def measure(nets: dict[str, dict[str, Any]], data: dict[str, Any], steps: int, batch: int, repeats: int,
            device: str, precision: str, left: Callable[[], float], log: Callable[[str], None] = print) -> dict[str, Any]:
    """Every net's arms (module docstring); stops before a round that ``left()`` seconds would not cover."""
    from recipesearch.data import DataSpec, load_data

    dev = torch.device(device)
    bundle = load_data(DataSpec(**data), dev)
    per_epoch = max(len(bundle.train.labels) // batch, 1)
    out: dict[str, Any] = {"timer": "CUDA events" if dev.type == "cuda" else "perf_counter (CPU stand-in)",
                           "steps": steps, "batch": batch, "repeats": repeats, "precision": precision,
                           "arms": list(ARMS), "nets": {}, "goals": dict(GOALS)}
    for label, model in nets.items():
        rec = recipe(model, data, steps, per_epoch, batch, device, precision)
        warm = recipe(model, data, max(2, steps // 5), per_epoch, batch, device, precision)
        for arm in ARMS:  # untimed: cuDNN's algorithm choice and the first allocations
            build(arm, warm, bundle, dev)()
        runs, round_seconds, skipped = [], [], None
        for r in range(repeats):
            if round_seconds and max(round_seconds) > left():
                skipped = f"{repeats - r} of {repeats} round(s) not run: out of time"
                break
            t0 = time.perf_counter()
            for arm in ARMS[r % len(ARMS):] + ARMS[:r % len(ARMS)]:
                run = build(arm, rec, bundle, dev)
                with Timer(dev) as timer:
                    images = run()
                runs.append({"round": r, "arm": arm, "seconds": timer.seconds, "images": images,
                             "images_per_s": images / timer.seconds})
            round_seconds.append(time.perf_counter() - t0)
        out["nets"][label] = summarise(runs, model, skipped)
        got = out["nets"][label]
        log(f"  {label}: bare {got['images_per_s']['bare']['median']:.0f} images/s, trainer/bare "
            f"{got['ratio']['trainer']['median']:.3f}, with 10 hooks {got['ratio']['trainer+10 hooks']['median']:.3f}")
    head = out["nets"].get(HEADLINE_NET) or next(iter(out["nets"].values()), None)
    out["trainer_vs_bare"] = head["ratio"]["trainer"]["median"] if head else float("nan")
    out["with_hooks"] = head["ratio"]["trainer+10 hooks"]["median"] if head else float("nan")
    out["met"] = {k: bool(out[k] >= goal) for k, goal in GOALS.items()}
    return out


def summarise(runs: list[dict[str, Any]], model: dict[str, Any], skipped: str | None) -> dict[str, Any]:
    """Per arm: images/s summary; per Trainer arm: bare's seconds / its seconds, paired by round."""
    by_round = {(r["round"], r["arm"]): r["seconds"] for r in runs}
    rounds = sorted({r["round"] for r in runs})
    ratio = {arm: summarize(by_round[(k, "bare")] / by_round[(k, arm)] for k in rounds
                            if (k, arm) in by_round and (k, "bare") in by_round) for arm in ARMS[1:]}
    return {"model": model, "runs": runs, "skipped": skipped, "ratio": ratio,
            "images_per_s": {arm: summarize(r["images_per_s"] for r in runs if r["arm"] == arm) for arm in ARMS}}
