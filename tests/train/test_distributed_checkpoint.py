"""Checkpoints of data-parallel runs (train/distributed_checkpoint.py): 2 gloo ranks spawned with
torch.multiprocessing on loopback, checkpointed mid-epoch, stopped, and resumed in a fresh process group end
bit-identical to the uninterrupted 2-rank run, on every rank (weights, BatchNorm statistics, averaged copies)."""
from __future__ import annotations

import io
import json
import os

import pytest
import torch

from recipesearch.train import checkpoint, distributed
from recipesearch.train.loop import Trainer
from tests.train.test_distributed import HOST, spawn_ranks

# Per-rank state of every kind: RNG draws (MixUp, stochastic depth), averaged copies (EMA), slow weights
# (Lookahead), dropped samples (selective backprop), resizing, BatchNorm (resnet8), channels_last weights.
RECIPES = {
    "ema-mixup": {"ema": {}, "lookahead": {}, "mixup": {"alpha": 0.2}, "stochastic_depth": {},
                  "progressive_resizing": {}, "label_smoothing": {}},
    "swa-selective": {"swa": {"swa_start": 0.5}, "selective_backprop": {}, "cutmix": {}, "layer_freezing": {},
                      "channels_last": {}},
}
STEPS_PER_EPOCH = 1438 // 64  # digits train split, global batch 64


class Crash(Exception):
    pass


def _recipe(job):
    from tests.conftest import make_recipe

    if "recipe_json" in job:  # a trial's recipe (tests/engine/test_multiworker.py)
        from recipesearch.recipe import recipe_from_dict

        return recipe_from_dict(json.loads(job["recipe_json"]))

    fields = {"model": {"name": "resnet8", "width": 0.5}, "max_duration": 2, "batch_size": 64,
              **job.get("overrides", {})}
    return make_recipe(RECIPES[job["recipe"]], **fields)


def _state(trainer: Trainer) -> dict[str, torch.Tensor]:
    """Everything a rank ends with: the model's weights and buffers, and the evaluated copy's."""
    s = trainer.state
    out = {f"model.{k}": v.clone() for k, v in s.model.state_dict().items()}
    if s.eval_model is not None:
        out.update({f"eval.{k}": v.clone() for k, v in s.eval_model.state_dict().items()})
    return out


def _whole(job, rank):
    trainer = Trainer(_recipe(job))
    result = trainer.fit()
    return {"result": result.to_dict(), "state": _state(trainer)}  # uninterrupted


def _crash(job, rank):
    """Checkpoint whenever rank 0's clock says so (the peers are given no interval, no folder), stop every rank
    once a checkpoint at ``crash_step`` or later is written (as kill -9 would)."""
    seen = []

    def on_checkpoint(path, info):
        seen.append((info["step"], None if path is None else str(path)))
        if info["step"] >= job["crash_step"]:
            raise Crash(info["step"])

    mine = {"checkpoint_every": job["every"], "checkpoint_dir": job["dir"]} if rank == 0 else {}
    trainer = Trainer(_recipe(job), on_checkpoint=on_checkpoint, **mine)
    try:
        trainer.fit()
    except Crash:
        pass
    return {"seen": seen, "step": trainer.state.step}


def _resume(job, rank):
    trainer = Trainer(_recipe(job), resume_from=job["dir"] if rank == 0 else None)
    start = trainer.state.step
    result = trainer.fit()
    return {"result": result.to_dict(), "state": _state(trainer), "start": start}


def _sequence(job, rank):
    """``job["jobs"]`` one after another in this group, each from its own seeded start: one spawn of the ranks
    (their start and torch import: seconds each) for runs that need no fresh process of their own."""
    return [_JOBS[each["kind"]](each, rank) for each in job["jobs"]]


_JOBS = {"whole": _whole, "crash": _crash, "resume": _resume, "sequence": _sequence}


def _rank_main(rank: int, world: int, port: int, out: str, job: dict) -> None:
    torch.set_num_threads(1)
    rv = distributed.Rendezvous(rank, world, HOST, port, timeout_s=60)
    try:
        with distributed.process_group(rv):
            found = _JOBS[job["kind"]](job, rank)
    except Exception as exc:  # noqa: BLE001 - a job's failure is a finding
        found = {"raised": f"{type(exc).__name__}: {exc}"}
    torch.save(found, os.path.join(out, f"{rank}.pt"))


def run_ranks(job: dict, world: int = 2, timeout: float = 240) -> list[dict]:
    """``job`` on ``world`` freshly spawned gloo ranks (a new process group each call)."""
    found = spawn_ranks(_rank_main, job, world, timeout)
    for r, f in enumerate(found):
        assert f and "raised" not in f, (r, f)  # every rank saved what it found, none raised
    return found


def _differ(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> list[str]:
    assert a.keys() == b.keys()
    return [k for k in a if not torch.equal(a[k], b[k])]


# The mid-epoch resumes: stopped mid-way through the first epoch (the second epoch's order is drawn after the
# resume) or the second (after SWA started: at 0.5 of 1.5 epochs, step 16).
RESUMED = {"ema-mixup": 7, "swa-selective": STEPS_PER_EPOCH + 7}
RESUMED_EPOCHS = {"max_duration": 1.5}
SHORT = {"max_duration": 0.5}  # the runs given a checkpoint of another world size


@pytest.mark.system
@pytest.mark.timeout(900)  # ~1 min; several checks in one run, on a busy machine
def test_two_ranks_resumed_mid_epoch_end_bit_identical_and_other_world_sizes_are_not_restored(tmp_path):
    """Two spawns of 2 ranks for every check (each case was a test with two spawns of its own); the second is
    a fresh process group, as a trial's retry is:

    - two ranks resumed mid-epoch end bit-identical to the uninterrupted 2-rank run, on every rank (weights,
      BatchNorm statistics, averaged copies), for both recipes of RECIPES (stopped in the first epoch and in
      the second, after SWA started): the first spawn runs each recipe whole and then crashes it after a
      checkpoint, the second resumes both;
    - a checkpoint of another world size is not restored: a 2-rank checkpoint (made in the first spawn) given
      to one worker, and a one-worker checkpoint given to 2 ranks (in the second spawn, its first run, as in a
      new trial): each run trains from step 0, with a warning, and ends as if it had been given none."""
    dirs = {name: tmp_path / name for name in RESUMED}
    two, one = tmp_path / "two", tmp_path / "one"
    other = "ema-mixup"
    first = run_ranks({"kind": "sequence", "jobs": [
        *[job for name, crash_step in RESUMED.items() for job in (
            {"kind": "whole", "recipe": name, "overrides": RESUMED_EPOCHS},
            {"kind": "crash", "recipe": name, "crash_step": crash_step, "every": 0.0, "dir": str(dirs[name]),
             "overrides": RESUMED_EPOCHS})],
        {"kind": "crash", "recipe": other, "crash_step": 5, "every": 0.0, "dir": str(two), "overrides": SHORT}]},
        timeout=600)

    # another world size, one worker: the 2-rank checkpoint is not restored
    recipe = _recipe({"recipe": other, "overrides": SHORT})
    alone = Trainer(recipe, resume_from=two).fit()
    assert alone.resumes == 0 and alone.steps == STEPS_PER_EPOCH // 2
    assert any("not resumed" in w and "2 data-parallel workers, this run has 1" in w for w in alone.warnings)
    assert alone.accuracy == Trainer(recipe).fit().accuracy
    with pytest.raises(Crash):
        Trainer(recipe, checkpoint_every=0.0, checkpoint_dir=one,
                on_checkpoint=lambda path, info: (_ for _ in ()).throw(Crash())).fit()
    assert (one / checkpoint.FILENAME).exists()

    second = run_ranks({"kind": "sequence", "jobs": [  # the one-worker resume first: its ranks' first run
        {"kind": "resume", "recipe": other, "dir": str(one), "overrides": SHORT},
        {"kind": "whole", "recipe": other, "overrides": SHORT},
        *[{"kind": "resume", "recipe": name, "dir": str(dirs[name]), "overrides": RESUMED_EPOCHS}
          for name in RESUMED]]}, timeout=600)

    # another world size, 2 ranks: the one-worker checkpoint is not restored
    resumed, fresh = ([rank[i] for rank in second] for i in range(2))
    assert [r["start"] for r in resumed] == [0, 0]
    assert any("1 data-parallel workers, this run has 2" in w for w in resumed[0]["result"]["warnings"])
    assert resumed[0]["result"]["accuracy"] == fresh[0]["result"]["accuracy"]
    assert _differ(resumed[1]["state"], fresh[1]["state"]) == []

    for k, (name, crash_step) in enumerate(RESUMED.items()):
        whole, crashed = ([rank[2 * k + i] for rank in first] for i in range(2))
        resumed = [rank[2 + k] for rank in second]
        folder = dirs[name]
        # every rank paused at the same steps; the file is rank 0's
        paused = [[s for s, _ in crashed[r]["seen"]] for r in range(2)]
        assert paused[0] == paused[1] == list(range(1, crash_step + 1))
        assert {p for _, p in crashed[0]["seen"]} == {str(folder / checkpoint.FILENAME)}
        assert {p for _, p in crashed[1]["seen"]} == {None}
        saved = torch.load(folder / checkpoint.FILENAME, weights_only=False)
        assert saved["world"] == 2 and saved["step"] == crash_step and len(saved["peers"]) == 1
        # the peer's part holds no weights: rank 0's are kept once
        peer = torch.load(io.BytesIO(saved["peers"][0]["snapshot"]), weights_only=False)
        assert all(p.numel() == 0 for p in peer["model"].parameters())
        assert sum(p.numel() for p in saved["model"].parameters()) > 0

        for rank in range(2):
            assert resumed[rank]["start"] == crash_step, name
            assert _differ(whole[rank]["state"], resumed[rank]["state"]) == [], (name, rank)
            got, expected = resumed[rank]["result"], whole[rank]["result"]
            assert (got["steps"], got["samples_seen"], got["resumes"]) == (expected["steps"],
                                                                           expected["samples_seen"], 1)
        got, expected = resumed[0]["result"], whole[0]["result"]
        assert (got["accuracy"], got["loss"]) == (expected["accuracy"], expected["loss"]), name
        assert not any("not resumed" in w for w in got["warnings"]) and got["checkpoints"] == crash_step
        assert got["train_seconds"] > saved["train_seconds"] > 0
        # the ranks differ where they should (each its own BatchNorm statistics): the comparison above is per rank
        assert _differ(whole[0]["state"], whole[1]["state"]) != [], name


def test_ranks_ask_about_once_a_second_or_every_step_for_short_intervals():
    from recipesearch.train.distributed_checkpoint import ask_gap

    assert ask_gap(0.01, 600.0) == 100  # 1 s of 10 ms steps
    assert ask_gap(0.01, 2.0) == 20  # a tenth of a 2 s interval
    assert ask_gap(0.01, 0.0) == ask_gap(5.0, 600.0) == ask_gap(0.0, 600.0) == 1
