"""What a trial that went on from a checkpoint must show, shared by the kill -9 scenarios (test_resume.py,
test_checkpoints.py), the worker killed after a checkpoint (test_worker_failures.py) and the lost worker node
(test_cluster.py); and the plugin that holds a trial at its first checkpoint, for a kill with no race."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def checkpointing_space(write_space, epochs: float, minutes: float, **overrides: Any) -> Path:
    """The tiny space at ``epochs`` epochs a trial, checkpointing every ``minutes`` (fractions: tenths of a s)."""
    from tests.engine.conftest import TINY_BASE

    return write_space(base={**TINY_BASE, "max_duration": epochs}, checkpoint_minutes=minutes, **overrides)


def checkpoint_files(out: Path) -> list[Path]:
    """The checkpoints of a Ray search's trials still in Tune's storage."""
    return sorted((out / "ray").glob("*/trial_*/checkpoint_*/trainer.pt"))


def uninterrupted(trial):
    """The trial's recipe trained start to end in this process: what a resumed run must equal."""
    from recipesearch.recipe import recipe_from_dict
    from recipesearch.train.loop import fit

    return fit(recipe_from_dict(json.loads(trial.user_attrs["recipe_json"])))


def check_resumed(trial, trials, selects: str = "test") -> None:
    """``trial`` went on from its predecessor's checkpoint: every step trained once, the result bit-identical to
    the uncut run (CPU), train_seconds the sum of its segments. ``selects``: the search's metric_split."""
    alone = uninterrupted(trial)
    attrs = trial.user_attrs
    assert attrs["resumes"] == 1 and attrs["checkpoints"] >= 1 and attrs["resume_gap_seconds"] > 0, attrs
    assert 0 < attrs["resumed_at_step"] < attrs["steps"], attrs  # went on from a step, not from 0
    assert attrs["steps"] == alone.steps  # every step trained, none twice
    # bit-identical to the run that was never cut: the test accuracy, and the metric the search selects on
    assert attrs["accuracy"] == alone.accuracy
    assert trial.values[0] == (alone.val_accuracy if selects == "val" else alone.accuracy)
    # train_seconds per step within an order of magnitude of what the search's uncut trials took (same tiny CNN, Ray
    # workers under the same load): a sanity bound (a time in the wrong unit, a segment's seconds lost), not a
    # timing comparison that a busy machine could decide. Not against ``alone``: it trains in this test process,
    # beside the other test worker, where a run once took 6x the trial's time; two uncut trials once differed 5x.
    uncut = sorted(t.user_attrs["train_seconds"] / t.user_attrs["steps"] for t in trials
                   if t.state.name == "COMPLETE" and not t.user_attrs.get("resumes") and t.user_attrs.get("steps"))
    assert uncut, [t.user_attrs for t in trials]
    assert uncut[0] / 10 < attrs["train_seconds"] / attrs["steps"] < 10 * uncut[-1], (attrs, uncut)


# A plugin (``--plugin``, shipped to every trial as user code) that holds the first trial to write a checkpoint
# right after that checkpoint reached Tune (or the in-process store), and marks it: the test kill -9s the search
# while that trial is surely in flight with a checkpoint (no race with the trial's end). Once per run directory:
# the resumes import the recorded plugin again, and their trials must not wait. On Ray the held worker is orphaned
# by the kill; the resume stops it (engine/ray_orphans.py), which the Ray test checks.
HOLD_PLUGIN = """
import json, os, time
from recipesearch.engine import faults

MARK = {mark!r}


def hook(at, config, info):
    if at != "checkpoint" or info.get("checkpoints") != 1:
        return
    try:
        open(MARK + ".claim", "x").close()  # one trial only, even with two first checkpoints at once
    except FileExistsError:
        return
    with open(MARK + ".tmp", "w") as f:
        f.write(json.dumps(int(config["number"])))
    os.rename(MARK + ".tmp", MARK)  # whole: the test reads the number once the mark exists
    time.sleep(600)  # until the kill -9, and the resume's stop of the orphans


faults.install(hook)
"""


def write_hold_plugin(folder: Path) -> Path:
    """Write HOLD_PLUGIN as ``hold_first_checkpoint.py`` into ``folder`` (beside the space file: ``--plugin
    hold_first_checkpoint`` finds it); the mark file it writes, with the held trial's number, once it holds."""
    mark = folder / "held"
    (folder / "hold_first_checkpoint.py").write_text(HOLD_PLUGIN.format(mark=str(mark)))
    return mark
