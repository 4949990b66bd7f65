"""A two-node Ray cluster on this machine (head 127.0.0.2, worker 127.0.0.3) runs a search via --address, its
model, dataset and one method the user's own code in a module that only the driver's folder holds; then, on the
same cluster, a search that loses the worker node mid-trial goes on from the trial's checkpoint."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import optuna
import pandas as pd
import pytest

from tests.engine.conftest import REPO, TINY_BASE
from tests.engine.resumed_checks import check_resumed, checkpoint_files, checkpointing_space

pytestmark = [pytest.mark.ray, pytest.mark.system]

# A user's module beside the space file: nothing on the cluster's nodes has it (they run from the repo, with
# the installed recipesearch); recipesearch must ship it (engine/shipping.py).
USER_MODULE = """
import torch
from pydantic import BaseModel, ConfigDict
from torch import nn
from torch.utils.data import Dataset

from recipesearch.algorithms import Algorithm
from recipesearch.hooks.events import Event


def tiny_net(num_classes, in_channels, image_size, width=8):
    return nn.Sequential(nn.Conv2d(in_channels, width, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
                         nn.Flatten(), nn.Linear(4 * width, num_classes))


class Digits(Dataset):
    def __init__(self, train):
        from recipesearch.data.digits import read_embedded  # sklearn's digits, without importing sklearn

        images, target = read_embedded()
        keep = [i % 5 != 0 if train else i % 5 == 0 for i in range(len(target))]
        self.images = torch.tensor(images[keep], dtype=torch.float32).unsqueeze(1) / 16
        self.targets = [int(t) for t in target[keep]]
        self.classes = [str(c) for c in range(10)]

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        return self.images[i], self.targets[i]


def digits():
    return {"train": Digits(True), "test": Digits(False)}


class Jitter(Algorithm):
    name = "jitter"
    description = "adds Gaussian noise to each batch"
    citation = "-"
    events = frozenset({Event.AFTER_DATALOADER})

    class Params(BaseModel):
        model_config = ConfigDict(extra="forbid")
        std: float = 0.05

    def apply(self, event, state):
        generator = torch.Generator(device=state.x.device).manual_seed(state.step)
        state.x = state.x + self.params.std * torch.randn(state.x.shape, generator=generator, device=state.x.device)
"""


@pytest.mark.timeout(900)
def test_search_on_a_two_node_loopback_cluster_then_losing_its_worker_node(
        tmp_path, write_space, ray_env, run_cli, loopback_cluster, load_run_study, wait_for_trials, trial_faults):
    """One two-node cluster (one CPU per node: two trials at a time need both; the loopback_cluster fixture, ended by
    pid afterwards) for two searches, one after the other (each a test with a cluster of its own before):

    1) a search via --address, the study in a database outside the run dir (--storage), the model, dataset and
       one method the user's own code: trials on both nodes, the user's module shipped; the driver only
       disconnects, and the cluster is still up for the next search;
    2) that next search loses the worker node mid-trial: the trial it took down runs again on the head from its
       checkpoint, bit-identical to the run of its recipe that was never cut (the test formerly in
       test_checkpoint_resume.py).
    """
    address = loopback_cluster.address
    # 1) user code on the cluster. The study in a database outside the run dir, as a cluster would share one.
    out, db = tmp_path / "run", f"sqlite:///{tmp_path / 'shared.db'}"
    (tmp_path / "usercode.py").write_text(USER_MODULE)
    base = {**TINY_BASE, "model": {"name": "usercode:tiny_net", "width": 8}, "data": {"name": "usercode:digits"}}
    space = write_space(trials=6, base=base, algorithms={"usercode:Jitter": {"std": {"range": [0.02, 0.1]}}})
    # the first two trials wait at their start until both have started: in flight together, so one on each node
    # (one CPU each) however fast the first would otherwise end
    together = trial_faults({"kind": "hold", "folder": str(tmp_path / "hold_first"), "parties": 2, "timeout": 120})
    r = run_cli(["search", str(space), "--out", str(out), "--address", address,
                 "--storage", db, "--quiet", "--no-report", "--plugin", together], env=ray_env)
    assert r.returncode == 0, r.stdout + r.stderr

    assert not (out / "study.db").exists()
    trials = optuna.load_study(study_name="tiny", storage=db).get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE"] * 6
    assert {t.user_attrs["node"] for t in trials} == {loopback_cluster.head, loopback_cluster.worker}
    assert len(pd.read_csv(out / "trials.csv")) == len(trials)
    meta = json.loads((out / "run.json").read_text())
    assert meta["ray_address"] == address and meta["cluster"]["nodes"] == 2 and meta["storage"] == db
    assert sorted(m["module"] for m in meta["user_code"]) == sorted(["usercode", together])
    assert all(m["sha256"] for m in meta["user_code"])
    assert any("usercode:Jitter" in str(t.user_attrs.get("algorithms")) for t in trials)
    # the driver only disconnected: the cluster is still up for the next search
    status = subprocess.run([loopback_cluster.ray, "status", f"--address={address}"], env=ray_env,
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr

    # 2) the next search loses the worker node. The two baseline runs at once, one on each node (one CPU each):
    # the ``hold`` fault has each wait at its start until both have started, so the two are in flight together
    # however late the worker node's trial starts (with 40 epochs and no hold, a search once ended before two
    # checkpointed trials were in flight together). Checkpoints every 0.3 s, 40 epochs (2-5 s a trial). Two
    # trials only: after the node is gone, everything left runs one at a time on the head.
    faults = trial_faults({"kind": "hold", "folder": str(tmp_path / "hold"), "parties": 2, "timeout": 120})
    space = checkpointing_space(write_space, epochs=40, minutes=0.005, name="node_loss.yaml", trials=2, concurrency=2)
    out, log = tmp_path / "node_loss", tmp_path / "search.log"
    # not --quiet: the retry's progress line is checked below
    proc = subprocess.Popen([sys.executable, "-m", "recipesearch", "search", str(space), "--out", str(out),
                             "--address", address, "--no-report", "--plugin", faults], env=ray_env, cwd=REPO,
                            stdout=log.open("w"), stderr=subprocess.STDOUT)

    # Both trials in flight have a checkpoint (so the one on the worker node has one): take the node down.
    def both_checkpointed(trials: list) -> bool:
        running = {t.number for t in trials if t.state.name == "RUNNING"}
        saved = {int(re.match(r"trial_(\d+)_", f.parents[1].name).group(1)) for f in checkpoint_files(out)}
        return len(running) == 2 and running <= saved

    wait_for_trials(proc, out, log, "two checkpointed trials in flight", both_checkpointed)
    loopback_cluster.kill_worker_node()
    assert proc.wait(timeout=600) == 0, log.read_text()
    printed = log.read_text()
    trials = load_run_study(out).get_trials()
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    assert len(complete) == 2, printed
    # the trial the node took down ran again on the head, from its checkpoint: Tune restarted it, or (when the
    # restart too was placed on the dead node before Ray knew it was gone) the loop queued it again as a new trial
    again = [t for t in complete if t.user_attrs.get("retries") or t.user_attrs.get("requeued_from") is not None]
    assert again, printed
    for t in again:
        assert t.user_attrs["node"] == loopback_cluster.head
        check_resumed(t, trials)
    rerun_of = {t.user_attrs.get("requeued_from") for t in trials}
    for t in trials:
        if t.state.name != "COMPLETE":
            assert t.state.name == "FAIL" and t.user_attrs["worker_lost"] and t.number in rerun_of, printed
    reasons = [t.user_attrs.get("retry_reason") or t.user_attrs.get("error") for t in trials
               if t.user_attrs.get("retries")]
    assert all(r.startswith(("worker lost", "worker crashed")) for r in reasons), reasons
    assert ("running it again (retry 1)" in printed or "queued again" in printed) and "Traceback" not in printed
    assert "Experiment state snapshotting" not in printed  # Tune's warning at each checkpoint is off
    assert len(pd.read_csv(out / "trials.csv")) == len(trials)
