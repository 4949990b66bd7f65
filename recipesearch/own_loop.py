"""A found recipe in your own PyTorch loop: ``recipesearch.apply(recipe, model, optimizer)``.

``apply`` builds the recipe's algorithms, the same hook objects ``recipesearch train`` builds, runs their
model surgery on ``model`` and returns a ``RecipeRun``. Each of its methods fires the trainer's events
(``recipesearch/hooks/events.py``) on one shared ``State``, in the trainer's order
(``recipesearch/train/loop.py``), so every method behaves as it does in ``recipesearch train``::

    run = recipesearch.apply("my_recipes/5660434a021b.yaml", model)  # INIT; the recipe's optimizer
    model, optimizer = run.model, run.optimizer
    while not run.done:
        run.epoch_start()                       # FIT_START (first call only), EPOCH_START
        for x, y in my_batches():
            x, y = run.batch(x, y)              # AFTER_DATALOADER, BATCH_START, BEFORE_FORWARD
            optimizer.zero_grad(set_to_none=True)
            with run.autocast():
                outputs = model(x)
            loss = run.loss(outputs, y)         # AFTER_FORWARD, BEFORE_LOSS, the recipe's loss, AFTER_LOSS
            run.backward(loss)                  # BEFORE_BACKWARD, backward, AFTER_BACKWARD
            run.step()                          # LR of the schedule, optimizer step, AFTER_STEP, BATCH_END
            if run.done:
                break
        run.epoch_end()                         # EPOCH_END
    evaluated = run.eval_model()                # FIT_END (once): EMA/SWA/Lookahead weights, flip TTA

Where a method needs what a hand-written loop does not have, it is handled here, not skipped:

- SAM's second forward/backward pass (and gradient clipping) run at AFTER_BACKWARD, i.e. inside
  ``run.backward(loss)``: the second pass re-runs forward, loss and backward on the batch ``run.batch``
  returned (with the targets last given to ``run.loss``). A loop that calls ``loss.backward()`` itself
  fires no AFTER_BACKWARD: ``run.step()`` then raises a ``ConfigError`` naming those methods.
- fp16 (``precision: fp16`` or ``mixed_precision: {dtype: fp16}``): the ``GradScaler`` scales in
  ``run.backward`` and steps in ``run.step``; stepping the optimizer yourself then raises.
- The learning rate: ``run.step()`` sets it from the recipe's schedule (warmup, decay, budget dilation,
  SWA's constant phase) before the step. A loop with its own optimizer step and LR calls
  ``run.after_step()`` instead, and then SWA's constant LR is the loop's business.
- The optimizer: None builds the recipe's (``build_optimizer``) after the surgery; a function
  ``model -> optimizer`` is called after the surgery; an optimizer built beforehand is refused when the
  surgery added or replaced parameters it would not train (squeeze_excite, ghost_batchnorm).
- Data the methods read: normalisation statistics (RandAugment, TrivialAugment), training images (patch
  whitening's estimate; SWA's BatchNorm pass unless ``eval_model(batches)`` gets the loop's batches) and
  whether a flip keeps the label (flip TTA) come from ``data``, by default the recipe's dataset.
- Methods schedule themselves on steps taken / ``total_steps`` (progressive resizing, EMA's half-life, layer
  freezing, SWA's start): ``total_steps = round(recipe epochs x steps_per_epoch)``, where
  ``steps_per_epoch`` defaults to the recipe's data at its batch size, last partial batch dropped.

Not here: data-parallel training, checkpoints and resuming, rungs, the NaN-loss check and the timing of
``recipesearch train``; the loop's batches, augmentation (crop, flip), evaluation and seeding are its own.
So the methods that change the trainer's loader (alternating_flip, translate) only warn (``RecipeRun.warnings``);
``recipesearch.functional`` has their batch functions for the loop to call.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from recipesearch.algorithms import Algorithm, build_algorithms
from recipesearch.algorithms.interactions import interaction_warnings
from recipesearch.errors import ConfigError, UserError
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State
from recipesearch.recipe import Recipe, load_recipe, recipe_from_dict
from recipesearch.train import optim as _optim
from recipesearch.train import schedule_free as _schedule_free
from recipesearch.train.loop import _DTYPES as _AUTOCAST  # precision -> autocast dtype, one table for both loops
from recipesearch.train.loop import soft_cross_entropy
from recipesearch.train.schedule import LRSchedule

if TYPE_CHECKING:
    from recipesearch.data import DataBundle

__all__ = ["RecipeRun", "apply", "as_recipe", "build_optimizer", "build_schedule", "total_steps"]

OptimizerArg = torch.optim.Optimizer | Callable[[nn.Module], torch.optim.Optimizer] | None


def as_recipe(recipe: Recipe | str | os.PathLike | dict[str, Any]) -> Recipe:
    """A validated ``Recipe`` from a Recipe, a path to a recipe YAML file (as ``recipesearch export`` writes
    them) or a mapping; anything else is a one-line ``ConfigError``."""
    if isinstance(recipe, Recipe):
        return recipe
    if isinstance(recipe, (str, os.PathLike)):
        if not os.path.isfile(recipe):
            raise ConfigError("recipe", f"no recipe file at {os.fspath(recipe)}")
        return load_recipe(recipe)
    if isinstance(recipe, dict):
        return recipe_from_dict(recipe)
    raise ConfigError("recipe", f"expected a Recipe, a path to a recipe YAML file or a mapping; "
                                f"got {type(recipe).__name__}")


def total_steps(recipe: Recipe, steps_per_epoch: int) -> int:
    """Optimizer steps of the whole run: the recipe's epochs (``max_duration`` x ``budget``), at least one."""
    return max(1, round(recipe.epochs * steps_per_epoch))


def build_optimizer(recipe: Recipe | str | os.PathLike | dict[str, Any], model: nn.Module) -> torch.optim.Optimizer:
    """The recipe's optimizer for ``model`` (its peak LR; ``RecipeRun.step`` or ``set_lr`` applies the schedule)."""
    return _optim.build_optimizer(as_recipe(recipe).optimizer, model)


def build_schedule(recipe: Recipe | str | os.PathLike | dict[str, Any], steps_per_epoch: int) -> LRSchedule:
    """The recipe's LR schedule: ``.factor(step)`` is the multiplier of the peak LR before optimizer step
    ``step`` (``recipesearch.train.optim.set_lr(optimizer, factor)`` applies it)."""
    recipe = as_recipe(recipe)
    return LRSchedule.of(recipe, steps_per_epoch, total_steps(recipe, steps_per_epoch))


def apply(recipe: Recipe | str | os.PathLike | dict[str, Any], model: nn.Module, optimizer: OptimizerArg = None, *,
          data: DataBundle | None = None, steps_per_epoch: int | None = None) -> RecipeRun:
    """Run the recipe's INIT methods on ``model`` and return the ``RecipeRun`` a hand-written loop drives.

    ``optimizer``: None (the recipe's), a function ``model -> optimizer`` or an optimizer (module docstring).
    ``data``: a ``DataBundle`` the methods read (default: the recipe's dataset, on the model's device).
    ``steps_per_epoch``: the loop's batches per epoch (default: the recipe's data at its batch size).
    """
    recipe = as_recipe(recipe)
    if not isinstance(model, nn.Module):
        raise ConfigError("model", f"expected a torch.nn.Module, got {type(model).__name__}")
    device = next(model.parameters(), torch.empty(0)).device
    if data is None:
        from recipesearch.data import load_data

        data = load_data(recipe.data, device)
    from recipesearch.models.tv import forward_problem

    problem = forward_problem(model, data.num_classes, data.channels, data.image_size, data.image_size)
    if problem is not None:  # the loss would end in a traceback at the first step (a target out of bounds)
        raise ConfigError("model", f"{problem} (the data has {data.num_classes} classes, {data.channels} "
                                   f"channel(s), {data.image_size} px)")
    algorithms = build_algorithms(recipe.algorithms, recipe=recipe)
    state = State(recipe=recipe, model=model, data=data, device=device, num_classes=data.num_classes,
                  loss_fn=soft_cross_entropy, autocast_dtype=_AUTOCAST[recipe.precision])
    return RecipeRun(state, algorithms, optimizer, steps_per_epoch)


class RecipeRun:
    """One training run of a recipe in the caller's loop; the module docstring maps its calls to events."""

    def __init__(self, state: State, algorithms: list[Algorithm], optimizer: OptimizerArg,
                 steps_per_epoch: int | None):
        self.state, self.algorithms = state, algorithms
        self.warnings = interaction_warnings([a.name for a in algorithms])
        in_loader = [a.name for a in algorithms if getattr(a, "augments_in_loader", False)]
        if in_loader:  # they set the augmentation of recipesearch's own loader (data/loader.py), which this loop lacks
            self.warnings.append(f"{', '.join(in_loader)} augment(s) recipesearch's own batch loader and do nothing "
                                 "here: augment the loop's batches with recipesearch.functional "
                                 "(alternating_flip_batch, translate_batch)")
        self._by_event = {ev: [a for a in algorithms if ev in a.events] for ev in Event}
        self._started = self._ended = self._backward_fired = self._stepped = False
        params_before = list(state.model.parameters())  # held, so ids stay unique while surgery runs
        self._fire(Event.INIT)
        s = state
        if s.autocast_dtype == torch.float16:
            s.grad_scaler = torch.amp.GradScaler(s.device.type)
        s.optimizer = self._optimizer(optimizer, params_before)
        s.train_loader = self._recipe_batches()
        s.steps_per_epoch = steps_per_epoch or len(s.train_loader)
        if s.steps_per_epoch < 1:
            raise ConfigError("steps_per_epoch", f"must be >= 1, got {s.steps_per_epoch}")
        s.total_steps = total_steps(s.recipe, s.steps_per_epoch)
        s.schedule = LRSchedule.of(s.recipe, s.steps_per_epoch, s.total_steps)
        s.forward_backward = self._forward_backward

    # ---- what the loop reads ---------------------------------------------------------------------------

    @property
    def model(self) -> nn.Module:
        """The model to train: after the recipe's surgery (blurpool, squeeze_excite, channels_last, compile)."""
        return self.state.model

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        return self.state.optimizer

    @property
    def schedule(self) -> LRSchedule:
        return self.state.schedule

    @property
    def total_steps(self) -> int:
        return self.state.total_steps

    @property
    def steps_per_epoch(self) -> int:
        return self.state.steps_per_epoch

    @property
    def step_count(self) -> int:
        """Optimizer steps taken so far."""
        return self.state.step

    @property
    def done(self) -> bool:
        """The recipe's steps are all taken: leave the batch loop, call ``epoch_end`` and evaluate."""
        return self.state.step >= self.state.total_steps

    def autocast(self) -> AbstractContextManager:
        """The recipe's precision for the forward pass (fp32: autocast disabled)."""
        return self.state.autocast()

    # ---- the loop's points -----------------------------------------------------------------------------

    def fit_start(self) -> None:
        """FIT_START (EMA's copy, patch whitening's estimate, SWA's LR): once, before the first batch;
        ``epoch_start`` and ``batch`` call it when the loop did not. Puts the model in train mode."""
        self._check_open()
        if not self._started:
            self._started = True
            self.state.model.train()
            _schedule_free.train_mode(self.state.optimizer)  # schedule-free: the model holds the weights it steps
            self._fire(Event.FIT_START)

    def epoch_start(self) -> None:
        """EPOCH_START (and FIT_START before the first epoch)."""
        self.fit_start()
        self._fire(Event.EPOCH_START)

    def batch(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """The per-batch methods (MixUp, CutMix, RandAugment, label smoothing, resizing, selective backprop...):
        returns the batch to train on; targets may come back as class distributions [B, K].

        ``x`` is the normalised batch [B, C, H, W] (moved to the model's device, to NHWC with channels_last),
        ``y`` class indices [B]."""
        self.fit_start()
        s = self.state
        x, y = x.to(s.device, non_blocking=True), y.to(s.device, non_blocking=True)
        s.x = x.contiguous(memory_format=torch.channels_last) if s.channels_last and x.ndim == 4 else x
        s.y = y
        s.samples_seen += len(y)
        self._fire(Event.AFTER_DATALOADER)
        self._fire(Event.BATCH_START)
        s.skip_step = False
        self._backward_fired = self._stepped = False
        self._fire(Event.BEFORE_FORWARD)
        return s.x, s.y

    def loss(self, outputs: Tensor, y: Tensor | None = None) -> Tensor:
        """The recipe's loss of ``outputs`` against ``y`` (the targets ``batch`` returned; None: those):
        soft-target cross-entropy, or BCE with ``bce_loss``."""
        s = self.state
        s.outputs = outputs
        if y is not None:
            s.y = y  # SAM's second pass trains on these targets too
        self._fire(Event.AFTER_FORWARD)
        self._fire(Event.BEFORE_LOSS)
        with s.autocast():
            s.loss = s.loss_fn(s.outputs, s.y)
        self._fire(Event.AFTER_LOSS)
        return s.loss

    def backward(self, loss: Tensor | None = None) -> None:
        """Backward of ``loss`` (None: the last ``run.loss``), scaled under fp16, then AFTER_BACKWARD:
        SAM's second pass, gradient clipping."""
        s = self.state
        loss = s.loss if loss is None else loss
        self._fire(Event.BEFORE_BACKWARD)
        (s.grad_scaler.scale(loss) if s.grad_scaler else loss).backward()
        self._fire(Event.AFTER_BACKWARD)
        self._backward_fired = True

    def step(self) -> None:
        """Set the LR from the recipe's schedule, step the optimizer (through the GradScaler under fp16; not
        when a method skipped the batch), then ``after_step``."""
        s = self.state
        self._check_backward()
        if not s.skip_step:
            _optim.set_lr(s.optimizer, s.schedule.factor(s.step))
            if s.grad_scaler:
                s.grad_scaler.step(s.optimizer)
                s.grad_scaler.update()
            else:
                s.optimizer.step()
        self._stepped = True
        self.after_step()

    def after_step(self) -> None:
        """After the optimizer step (the loop's own, or ``step``'s): count it, then AFTER_STEP (EMA, Lookahead,
        layer freezing) and BATCH_END."""
        s = self.state
        self._check_open()
        self._check_backward()
        if s.grad_scaler is not None and not self._stepped:
            raise ConfigError("precision", "fp16 steps through a GradScaler: call run.step(), not optimizer.step() "
                                           "and run.after_step()")
        s.step += 1
        self._fire(Event.AFTER_STEP)
        self._fire(Event.BATCH_END)
        self._backward_fired = self._stepped = False

    def epoch_end(self) -> None:
        """EPOCH_END (SWA's averaging); counts the epoch."""
        self._fire(Event.EPOCH_END)
        self.state.epoch += 1

    def fit_end(self, batches: Iterable | None = None) -> nn.Module:
        """FIT_END, once: EMA/SWA put their averaged copy in place, Lookahead's last sync, flip TTA's wrapper.
        ``batches`` (``(x, y)`` pairs) feed SWA's BatchNorm pass; None: the recipe's training batches.
        Returns the model to evaluate; training cannot go on afterwards."""
        if not self._ended:
            self.fit_start()
            if batches is not None:
                self.state.train_loader = batches
            # schedule-free: the averaged weights, BatchNorm statistics from the training batches (as SWA's)
            _schedule_free.eval_mode(self.state.optimizer, self.state.model, self.state.train_loader)
            self._fire(Event.FIT_END)
            self._ended = True
        return self.eval_model()

    def eval_model(self) -> nn.Module:
        """The model to evaluate: the EMA/SWA copy where the recipe has one (``fit_end`` runs first if the
        loop did not call it), else the trained model."""
        if not self._ended:
            return self.fit_end()
        return self.state.eval_model or self.state.model

    # ---- internals -------------------------------------------------------------------------------------

    def _fire(self, event: Event) -> None:
        for algo in self._by_event[event]:
            if algo.match(event, self.state):
                algo.apply(event, self.state)

    def _check_open(self) -> None:
        if self._ended:
            raise UserError("the run has ended (fit_end or eval_model was called): start a new one with "
                            "recipesearch.apply to train again")

    def _check_backward(self) -> None:
        after_backward = self._by_event[Event.AFTER_BACKWARD]
        if after_backward and not self._backward_fired:
            names = ", ".join(a.name for a in after_backward)
            raise ConfigError(f"algorithms.{after_backward[0].name}",
                              f"{names} run after the backward pass: call run.backward(loss), not loss.backward()")

    def _forward_backward(self) -> Tensor:
        """Forward, loss and backward on the current batch without events: SAM's second pass (as the trainer's)."""
        s = self.state
        s.optimizer.zero_grad(set_to_none=True)
        with s.autocast():
            s.outputs = s.model(s.x)
            s.loss = s.loss_fn(s.outputs, s.y)
        (s.grad_scaler.scale(s.loss) if s.grad_scaler else s.loss).backward()
        return s.loss

    def _optimizer(self, given: OptimizerArg, params_before: list[nn.Parameter]) -> torch.optim.Optimizer:
        model = self.state.model
        if given is None:
            return _optim.build_optimizer(self.state.recipe.optimizer, model)
        if isinstance(given, torch.optim.Optimizer):
            self._check_covers(given, params_before)
            optimizer = given
        elif callable(given):
            optimizer = given(model)
            if not isinstance(optimizer, torch.optim.Optimizer):
                raise ConfigError("optimizer", f"the function returned a {type(optimizer).__name__}, "
                                               "not a torch.optim.Optimizer")
        else:
            raise ConfigError("optimizer", "expected a torch.optim.Optimizer, a function model -> optimizer, or "
                                           f"None for the recipe's; got {type(given).__name__}")
        for group in optimizer.param_groups:  # the peak the schedule's factor multiplies
            group.setdefault("initial_lr", group["lr"])
        return optimizer

    def _check_covers(self, optimizer: torch.optim.Optimizer, params_before: list[nn.Parameter]) -> None:
        """An optimizer built before the surgery must train every parameter the surgery added."""
        held = {id(p) for group in optimizer.param_groups for p in group["params"]}
        before = {id(p) for p in params_before}
        after = list(self.state.model.parameters())
        added = [p for p in after if id(p) not in before and p.requires_grad and id(p) not in held]
        replaced = before - {id(p) for p in after}
        if added or replaced & held:
            surgery = ", ".join(a.name for a in self._by_event[Event.INIT]) or "none"
            raise ConfigError("optimizer", f"built before the recipe's model surgery ({surgery}) added or replaced "
                                           "parameters it would not train: pass a function model -> optimizer, or "
                                           "None for the recipe's optimizer")

    def _recipe_batches(self) -> Any:
        """The recipe's training batches as ``recipesearch train`` draws them (its own generator, seeded by the
        recipe): what SWA's BatchNorm pass reads, and what sets ``steps_per_epoch`` by default."""
        from recipesearch.data import BatchLoader

        s, data = self.state, self.state.data
        generator = torch.Generator(device=data.train.labels.device)
        generator.manual_seed(s.recipe.seed)
        return BatchLoader(data.train.images, data.train.labels, s.recipe.batch_size, data.mean, data.std,
                           augment=s.recipe.data.augment, hflip=data.hflip, crop_padding=data.crop_padding,
                           generator=generator, channels_last=s.channels_last, workers=data.workers)
