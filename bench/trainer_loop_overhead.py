"""The event-loop overhead per step of trainer_efficiency (§1; issue 30, CPU item 1): the Trainer's own Python work.

A model so small that the loop's own Python work is most of a step: one Linear on 16 features (1x4x4 uint8
images), batches of 8, one thread, no augmentation. The bare loop iterates the same loader (same batches), so
data work cancels and what is left is the Trainer's: event dispatch, hooks, LR schedule, clocks, NaN check.
Arms: the Trainer with 0, 5 and 10 no-op per-step hooks (``NoOpHook``) and with registered methods set to do
nothing (``LOOP_REGISTERED``), against that bare loop; whole runs timed, arms interleaved, overhead = paired
difference / steps. Goal: <= ``LOOP_GOAL_US`` µs per step with ``LOOP_GOAL_HOOKS`` hooks. ``loop_section`` is
its paragraph and table in §1.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from bench.common import fmt, fmt_summary, goal_text, interleave, load_now, md_table, summarize
from recipesearch.algorithms import Algorithm, get_algorithm
from recipesearch.hooks.events import Event

# The benchmark this measurement is part of (bench/trainer_efficiency.py imports this module, so not from there).
BENCHMARK = "trainer_efficiency"

LOOP_STEPS = (2000, 1000)  # steps per timed run: full, quick
LOOP_REPEATS = (15, 7)
LOOP_BATCH = 8
LOOP_IMAGE = (1, 4, 4)
LOOP_CLASSES = 10
LOOP_GOAL_US = 30.0  # µs of loop work per step ...
LOOP_GOAL_HOOKS = 10  # ... with this many no-op per-step hooks
PER_STEP_EVENTS = (Event.AFTER_DATALOADER, Event.BATCH_START, Event.BEFORE_FORWARD, Event.AFTER_FORWARD,
                   Event.BEFORE_LOSS, Event.AFTER_LOSS, Event.BEFORE_BACKWARD, Event.AFTER_BACKWARD,
                   Event.AFTER_STEP, Event.BATCH_END)
# Registered methods with per-step hooks, configured so that no step does anything: EMA and Lookahead never
# reach their interval (``match`` is False), layer freezing starts after the run's last step (``apply`` returns
# at once), selective backprop's window is empty (``match`` is False). The others with per-step hooks always
# change the batch or the gradients (MixUp, CutMix, Cutout, ColOut, label smoothing, RandAugment,
# TrivialAugment, progressive resizing, gradient clipping) or run at step 0 whatever their interval (SAM).
LOOP_REGISTERED = {"ema": {"update_interval": 10**9}, "lookahead": {"k": 10**9},
                   "layer_freezing": {"freeze_start": 0.999}, "selective_backprop": {"start": 1.0, "end": 1.0}}
LOOP_ARMS = ("bare", "trainer", "trainer+5 no-op hooks", "trainer+10 no-op hooks", "trainer+registered no-op")


def tiny_linear(num_classes: int, in_channels: int, image_size: int) -> torch.nn.Module:
    """The model of the loop-overhead arms (``model.name: bench.trainer_loop_overhead:tiny_linear``)."""
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(in_channels * image_size**2, num_classes))


class NoOpHook(Algorithm):
    """A hook at one per-step event that does nothing there, the two ways real methods do: ``declines`` ones say
    no in ``match`` (EMA between its updates), the others return at once from ``apply`` (layer freezing before
    its start)."""

    name = "noop"
    description = "does nothing at a per-step event (loop-overhead benchmark)"
    citation = "-"
    events = frozenset({Event.BATCH_END})
    declines = False

    def match(self, event: Event, state: Any) -> bool:
        return state.step < 0 if self.declines else event in self.events

    def apply(self, event: Event, state: Any) -> None:
        return


def noop_hooks(n: int) -> list[Algorithm]:
    """``n`` no-op hooks (0..10), one per per-step event, spread over the step (5: every other event),
    alternately declining in ``match`` and returning from ``apply``."""
    events = PER_STEP_EVENTS[::2][:n] if n <= len(PER_STEP_EVENTS) // 2 else PER_STEP_EVENTS[:n]
    hooks = []
    for i, event in enumerate(events):
        cls = type(f"NoOp{event.name.title().replace('_', '')}", (NoOpHook,),
                   {"name": f"noop_{event.value}", "events": frozenset({event}), "declines": i % 2 == 0})
        hooks.append(cls())
    return hooks


def tiny_bundle(steps: int):
    """Device-resident (CPU) uint8 images, one epoch of ``steps`` batches, so no epoch boundary mid-run."""
    from recipesearch.data.bundle import DataBundle, ImageTensors

    g = torch.Generator().manual_seed(0)
    n = LOOP_BATCH * steps
    c, h, w = LOOP_IMAGE
    train = ImageTensors(torch.randint(0, 256, (n, c, h, w), dtype=torch.uint8, generator=g),
                         torch.randint(0, LOOP_CLASSES, (n,), generator=g))
    test = ImageTensors(train.images[:LOOP_BATCH], train.labels[:LOOP_BATCH])
    return DataBundle(train=train, val=None, test=test, num_classes=LOOP_CLASSES, channels=c, image_size=h,
                      mean=(0.5,) * c, std=(0.25,) * c, hflip=False, crop_padding=0, name="tiny",
                      class_names=tuple(str(i) for i in range(LOOP_CLASSES)))


def _loop_recipe(steps: int, algorithms: dict[str, dict[str, Any]] | None = None):
    from recipesearch.recipe import recipe_from_dict

    return recipe_from_dict({
        "name": "bench-loop-overhead", "model": {"name": "bench.trainer_loop_overhead:tiny_linear"},
        "data": {"name": "digits", "augment": False},
        # constant LR: the bare loop sets none, and the Trainer's set_lr then leaves the weights bit-identical
        "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 5e-4},
        "schedule": {"name": "constant", "warmup_epochs": 0},
        "max_duration": 1.0, "batch_size": LOOP_BATCH, "seed": 0, "threads": 1, "device": "cpu",
        "algorithms": algorithms or {},
    })


def _trainer_for(arm: str, bundle, trainer_cls: Any = None):
    if trainer_cls is None:
        from recipesearch.train.loop import Trainer as trainer_cls
    steps = len(bundle.train.labels) // LOOP_BATCH
    trainer = trainer_cls(_loop_recipe(steps, LOOP_REGISTERED if arm.endswith("registered no-op") else None),
                          data=bundle)
    hooks = int(arm.split("+")[1].split()[0]) if "no-op hooks" in arm else 0
    if hooks:
        trainer.set_algorithms(noop_hooks(hooks))
    return trainer


def _bare_tiny(bundle):
    """(model, optimizer, loader) built exactly as the Trainer builds them for ``_loop_recipe``."""
    from recipesearch.data import BatchLoader
    from recipesearch.models import create_model
    from recipesearch.train.loop import seed_everything
    from recipesearch.train.optim import build_optimizer

    recipe = _loop_recipe(len(bundle.train.labels) // LOOP_BATCH)
    torch.set_num_threads(1)
    gen = seed_everything(recipe.seed)
    model = create_model(recipe.model.name, num_classes=bundle.num_classes, in_channels=bundle.channels,
                         image_size=bundle.image_size)
    opt = build_optimizer(recipe.optimizer, model)
    loader = BatchLoader(bundle.train.images, bundle.train.labels, LOOP_BATCH, bundle.mean, bundle.std,
                         augment=False, hflip=False, crop_padding=0, generator=gen)
    return model, opt, loader


def bare_tiny_loop(model: torch.nn.Module, opt: torch.optim.Optimizer, loader: Any, steps: int) -> tuple[int, int]:
    """The reference: zero_grad, forward, loss, backward, step over the loader's batches; (wall, CPU) nanoseconds."""
    model.train()
    step = 0
    cpu, start = time.process_time_ns(), time.perf_counter_ns()
    while step < steps:
        for x, y in loader:
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            step += 1
            if step == steps:
                break
    return time.perf_counter_ns() - start, time.process_time_ns() - cpu


def loop_run(arm: str, bundle, trainer_cls: Any = None) -> tuple[int, int, torch.Tensor]:
    """One timed run of ``arm`` over the whole bundle (one epoch): (wall ns, CPU ns of the process, final weights
    of the Linear). Construction is outside the timed region; the Trainer is timed around ``train()``."""
    steps = len(bundle.train.labels) // LOOP_BATCH
    if arm == "bare":
        model, opt, loader = _bare_tiny(bundle)
        ns, cpu_ns = bare_tiny_loop(model, opt, loader, steps)
    else:
        trainer = _trainer_for(arm, bundle, trainer_cls)
        cpu, start = time.process_time_ns(), time.perf_counter_ns()
        trainer.train()
        ns, cpu_ns = time.perf_counter_ns() - start, time.process_time_ns() - cpu
        if trainer.state.step != steps:
            raise RuntimeError(f"{arm}: {trainer.state.step} steps, not {steps}")
        model = trainer.state.model
    return ns, cpu_ns, model[1].weight.detach().clone()


def loop_overhead(quick: bool = False, repeats: int | None = None, arms: tuple[str, ...] = LOOP_ARMS,
                  trainers: dict[str, Any] | None = None) -> dict[str, Any]:
    """µs per step of the Trainer's own work: (Trainer run - bare run of the same repeat) / steps, per arm, on the
    wall clock and in CPU time of the process. ``trainers`` maps an arm to the Trainer class it runs (a
    before/after comparison); by default the current one."""
    steps = LOOP_STEPS[1 if quick else 0]
    repeats = repeats or LOOP_REPEATS[1 if quick else 0]
    trainers = trainers or {}
    threads = torch.get_num_threads()
    print(f"[{BENCHMARK}] loop overhead: {steps} steps x {len(arms)} arms x {repeats} repeats", flush=True)
    bundle = tiny_bundle(steps)
    for arm in arms:  # untimed warm-up (first-call costs)
        loop_run(arm, tiny_bundle(50), trainers.get(arm))
    ref = loop_run("bare", bundle)[2]
    runs, same = [], {}
    for r, arm in interleave(arms, repeats):
        ns, cpu_ns, weights = loop_run(arm, bundle, trainers.get(arm))
        same[arm] = same.get(arm, True) and bool(torch.equal(weights, ref))
        runs.append({"repeat": r, "arm": arm, "ns": ns, "cpu_ns": cpu_ns, "us_per_step": ns / steps / 1000,
                     "cpu_us_per_step": cpu_ns / steps / 1000, "load": load_now()})
    torch.set_num_threads(threads)
    out: dict[str, Any] = {
        "steps": steps, "repeats": repeats, "batch_size": LOOP_BATCH, "image": list(LOOP_IMAGE), "threads": 1,
        "arms": list(arms), "hooks": {a: _loop_hooks(a) for a in arms}, "registered": LOOP_REGISTERED, "runs": runs,
        # Lookahead's FIT_END puts its slow weights (never synced: the initial ones) in the model, so that arm's
        # final weights differ from the bare loop's by design; every other arm must match it bit for bit
        "same_weights_as_bare": {a: None if a.endswith("registered no-op") else same[a] for a in arms},
        "load_during_runs": summarize(m["load"][0] for m in runs if m.get("load")),
    }
    goal_arm = f"trainer+{LOOP_GOAL_HOOKS} no-op hooks"
    goal: dict[str, Any] = {"us_max": LOOP_GOAL_US, "hooks": LOOP_GOAL_HOOKS, "arm": goal_arm}
    for key, clock in (("", "us_per_step"), ("cpu_", "cpu_us_per_step")):
        per_step = {a: [m[clock] for m in runs if m["arm"] == a] for a in arms}
        overhead = {a: [t - b for t, b in zip(per_step[a], per_step["bare"])] for a in arms if a != "bare"}
        out[f"{key}us_per_step"] = {a: summarize(v) for a, v in per_step.items()}
        out[f"{key}overhead_us_per_step"] = {a: summarize(v) for a, v in overhead.items()}
        goal[f"{key}met"] = bool(goal_arm in overhead and np.median(overhead[goal_arm]) <= LOOP_GOAL_US)
    out["goal"] = goal
    return out


def _loop_hooks(arm: str) -> int:
    if arm.endswith("registered no-op"):
        return sum(len(get_algorithm(n).events & set(PER_STEP_EVENTS)) for n in LOOP_REGISTERED)
    return int(arm.split("+")[1].split()[0]) if "no-op hooks" in arm else 0


def loop_rows(loop: dict[str, Any]) -> list[list[Any]]:
    """The loop-overhead table: arm, per-step hooks, wall µs/step, wall overhead µs/step (median [IQR], min–max),
    CPU-time overhead µs/step, the goal (judged on the goal's arm only: wall / CPU), same weights as the bare loop."""
    goal = loop["goal"]
    rows = []
    for arm in loop["arms"]:
        wall, cpu = loop["overhead_us_per_step"].get(arm), loop["cpu_overhead_us_per_step"].get(arm)
        judged = "/".join("yes" if o["median"] <= goal["us_max"] else "no" for o in (wall, cpu)) \
            if arm == goal["arm"] else ""
        same = loop["same_weights_as_bare"].get(arm)
        rows.append([arm, loop["hooks"][arm], fmt_summary(loop["us_per_step"][arm], ".1f"),
                     fmt_summary(wall, ".1f") if wall else "–",
                     f"{fmt(wall['min'], '.1f')}–{fmt(wall['max'], '.1f')}" if wall else "–",
                     fmt_summary(cpu, ".1f") if cpu else "–", judged,
                     "reference" if arm == "bare" else "n/a" if same is None else "yes" if same else "no"])
    return rows


def loop_section(loop: dict[str, Any] | None) -> list[str]:
    """§1's event-loop overhead paragraph and table (issue 30, CPU item 1)."""
    if not loop:
        return ["", "_Event-loop overhead per step: not measured yet (`python -m bench.run_all --only "
                f"{BENCHMARK}`)._"]
    goal = loop["goal"]
    c, h, w = loop["image"]
    return [
        "", f"**Event-loop overhead per step** (no GPU needed): microseconds of Python work per training step outside "
        "the model and optimizer. A model so small that the loop dominates (`tiny_linear`: one Linear on "
        f"{c}x{h}x{w} uint8 images, batch {loop['batch_size']}, {loop['threads']} thread, no augmentation) is trained "
        f"for {loop['steps']} steps (one epoch) by the `Trainer` with no algorithms, with 5 and with 10 hooks on "
        "per-step events that do nothing (`NoOpHook`, one per event — 5: every other event — alternately declining "
        "in `match` and returning at once from `apply`), and with the registered methods whose per-step hooks can be "
        f"set to do nothing ({', '.join(f'`{k}`' for k in loop['registered'])}: `LOOP_REGISTERED`), against a bare "
        "loop (zero_grad, forward, loss, backward, step) over the same loader, so the data work cancels. The "
        "overhead includes the LR schedule, the clocks and the per-step NaN check. Whole runs are timed "
        "(`perf_counter_ns`; CPU time of the process with `process_time_ns`, which a busy machine disturbs less), "
        "construction outside; arms interleaved; overhead = (Trainer run − bare run of the same repeat) / steps, "
        f"{loop['repeats']} repeats; 1-minute load average during the runs "
        f"{fmt_summary(loop.get('load_during_runs', {}), '.1f', 'range')}. "
        f"Goal: ≤ {goal['us_max']:g} µs per step with {goal['hooks']} hooks: wall-clock {goal_text(goal['met'])}, "
        f"CPU time {goal_text(goal.get('cpu_met'))}.",
        "",
        md_table(["arm", "per-step hooks", "µs/step (median [IQR])", "overhead µs/step (median [IQR])",
                  "overhead min–max", "CPU-time overhead µs/step", f"≤ {goal['us_max']:g} µs (wall/CPU)",
                  "same weights as bare"], loop_rows(loop)),
    ]
