"""Training checkpoints: a run checkpointed at step k and resumed in a fresh Trainer ends bit-identical to the
uninterrupted run (CPU), mid-epoch or at an epoch's end, for recipes that combine many stateful algorithms;
checkpoints cost nothing in train_seconds; a checkpoint of another recipe is never restored."""
from __future__ import annotations

import threading
import time

import pytest
import torch

from recipesearch.train import checkpoint
from recipesearch.train.loop import Trainer

# Two recipes (the pairs refused together are split between them): averaged copies (EMA, SWA), slow weights
# (Lookahead), a second pass (SAM), batch mixing (MixUp, CutMix), random depth, layer freezing, resizing,
# dropped samples (selective backprop), whitened stem (patch whitening), Muon with its AdamW rest; schedule-free SGD.
STATEFUL = {
    "ema-sam": ({"ema": {}, "lookahead": {}, "sam": {}, "mixup": {"alpha": 0.2}, "stochastic_depth": {},
                 "layer_freezing": {}, "progressive_resizing": {}, "patch_whitening": {}, "label_smoothing": {}},
                {}),
    "swa-muon": ({"swa": {"swa_start": 0.5}, "selective_backprop": {}, "cutmix": {}, "layer_freezing": {},
                  "progressive_resizing": {}, "channels_last": {}},
                 {"optimizer": {"name": "muon", "lr": 0.02}}),
    # schedule-free SGD: its z sequence and running weight sum in the optimizer's state, EMA beside it
    "ema-schedulefree": ({"ema": {}, "mixup": {"alpha": 0.2}, "label_smoothing": {}},
                         {"optimizer": {"name": "sgd_schedulefree", "lr": 0.3}}),
}
STEPS_PER_EPOCH = 1438 // 64  # digits train split, batch 64


class Crash(Exception):
    pass


def _recipe(tiny_recipe, name):
    algorithms, overrides = STATEFUL[name]
    return tiny_recipe(algorithms, model={"name": "resnet8", "width": 0.5}, max_duration=2, batch_size=64,
                       **overrides)


def _crash_after(step: int):
    """``on_checkpoint`` that ends the run (as kill -9 would) once a checkpoint at ``step`` is on disk."""
    def on_checkpoint(path, info):
        if info["step"] >= step:
            raise Crash(path)
    return on_checkpoint


def _weights(trainer: Trainer) -> dict[str, torch.Tensor]:
    s = trainer.state
    out = {f"model.{k}": v for k, v in s.model.state_dict().items()}
    if s.eval_model is not None:
        out.update({f"eval.{k}": v for k, v in s.eval_model.state_dict().items()})
    return out


@pytest.mark.parametrize("name", sorted(STATEFUL))
@pytest.mark.parametrize("crash_step", [STEPS_PER_EPOCH + 7, STEPS_PER_EPOCH], ids=["mid-epoch", "epoch-end"])
def test_resumed_run_is_bit_identical_to_the_uninterrupted_one(tiny_recipe, tmp_path, name, crash_step):
    recipe = _recipe(tiny_recipe, name)
    whole = Trainer(recipe)
    expected = whole.fit()

    first = Trainer(recipe, checkpoint_every=0.0, checkpoint_dir=tmp_path, on_checkpoint=_crash_after(crash_step))
    with pytest.raises(Crash):
        first.fit()
    assert first.state.step == crash_step
    saved = torch.load(tmp_path / checkpoint.FILENAME, weights_only=False)
    assert saved["step"] == crash_step and saved["loader"]["next_batch"] == (crash_step - 1) % STEPS_PER_EPOCH + 1

    resumed = Trainer(recipe, resume_from=tmp_path)  # a fresh trainer, as in a new worker process
    assert resumed.state.step == crash_step
    got = resumed.fit()
    assert (got.accuracy, got.loss, got.steps, got.samples_seen) == (expected.accuracy, expected.loss,
                                                                    expected.steps, expected.samples_seen)
    a, b = _weights(whole), _weights(resumed)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a), [k for k in a if not torch.equal(a[k], b[k])]
    assert got.resumes == 1 and got.checkpoints == crash_step and not any("not resumed" in w for w in got.warnings)
    # train_seconds: the checkpoint's seconds plus this segment's (the segment ran after the checkpoint)
    assert got.train_seconds > saved["train_seconds"] > 0
    assert 0 < got.resume_gap_seconds < time.time() - saved["written_at"]  # from the checkpoint's writing to resume


def test_checkpoints_are_outside_train_seconds(tiny_recipe, tmp_path):
    recipe = tiny_recipe(max_duration=0.25)  # 11 steps: 10 checkpoints of 0.25 s (2 epochs' 89 took 22 s)
    slow, every = 0.25, 0.0

    def slow_checkpoint(path, info):
        time.sleep(slow)  # handing it to Ray Tune, say

    start = time.perf_counter()
    result = Trainer(recipe, checkpoint_every=every, checkpoint_dir=tmp_path, on_checkpoint=slow_checkpoint).fit()
    wall = time.perf_counter() - start
    n = result.steps - 1  # every step but the last
    assert result.checkpoints == n
    assert result.checkpoint_seconds >= n * slow
    assert result.train_seconds < wall - n * slow  # the sleeps are in checkpoint_seconds only
    assert result.accuracy == Trainer(recipe).fit().accuracy  # checkpointing changes nothing in the run


def test_checkpoint_interval_is_wall_seconds(tiny_recipe, tmp_path):
    written = []
    result = Trainer(tiny_recipe(max_duration=2), checkpoint_every=3600.0, checkpoint_dir=tmp_path,
                     on_checkpoint=lambda path, info: written.append(info)).fit()
    assert written == [] and result.checkpoints == 0 and not (tmp_path / checkpoint.FILENAME).exists()


def test_a_checkpoint_of_another_recipe_is_not_restored(tiny_recipe, tmp_path):
    with pytest.raises(Crash):
        Trainer(tiny_recipe(max_duration=2), checkpoint_every=0.0, checkpoint_dir=tmp_path,
                on_checkpoint=_crash_after(10)).fit()
    other = tiny_recipe(max_duration=2, seed=1)
    got = Trainer(other, resume_from=tmp_path).fit()
    assert got.resumes == 0 and got.steps == 2 * (1438 // 32)  # every step trained here
    assert any("not resumed" in w and "checkpoint of recipe" in w for w in got.warnings)
    assert got.accuracy == Trainer(other).fit().accuracy


def test_an_unreadable_checkpoint_trains_from_the_start(tiny_recipe, tmp_path):
    (tmp_path / checkpoint.FILENAME).write_bytes(b"half a checkpoint")
    got = Trainer(tiny_recipe(), resume_from=tmp_path).fit()
    assert got.resumes == 0 and any("cannot read" in w for w in got.warnings)


def test_a_run_that_cannot_be_pickled_trains_without_checkpoints(tiny_recipe, tmp_path):
    trainer = Trainer(tiny_recipe(), checkpoint_every=0.0, checkpoint_dir=tmp_path)
    trainer.state.extra["lock"] = threading.Lock()  # not picklable, as a compiled model is not
    result = trainer.fit()
    assert result.checkpoints == 0 and result.steps == trainer.state.total_steps
    assert any(w.startswith("trained without checkpoints: cannot save") for w in result.warnings)
    assert not list(tmp_path.iterdir())  # no half-written file left behind


def test_write_is_atomic(tmp_path):
    path = checkpoint.write({"format": checkpoint.FORMAT, "n": 1}, tmp_path / checkpoint.FILENAME)
    with pytest.raises(TypeError):
        checkpoint.write({"n": 2, "lock": threading.Lock()}, path)
    assert torch.load(path, weights_only=False)["n"] == 1  # the previous checkpoint stands whole
    assert [p.name for p in tmp_path.iterdir()] == [checkpoint.FILENAME]
