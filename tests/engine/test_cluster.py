"""A two-node Ray cluster on this machine (head 127.0.0.2, worker 127.0.0.3) runs a search via --address, its
model, dataset and one method the user's own code in a module that only the driver's folder holds."""
from __future__ import annotations

import json
import subprocess

import optuna
import pandas as pd
import pytest

from tests.engine.conftest import TINY_BASE

pytestmark = [pytest.mark.ray, pytest.mark.slow]

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
        from sklearn.datasets import load_digits

        bunch = load_digits()
        keep = [i % 5 != 0 if train else i % 5 == 0 for i in range(len(bunch.target))]
        self.images = torch.tensor(bunch.images[keep], dtype=torch.float32).unsqueeze(1) / 16
        self.targets = [int(t) for t in bunch.target[keep]]
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


def test_search_on_a_two_node_loopback_cluster(tmp_path, write_space, ray_env, run_cli, loopback_cluster):
    # One CPU per node (the loopback_cluster fixture, ended by pid afterwards): two trials at a time need both.
    address = loopback_cluster.address
    # The study in a database outside the run dir, as a cluster would share one (--storage).
    out, db = tmp_path / "run", f"sqlite:///{tmp_path / 'shared.db'}"
    (tmp_path / "usercode.py").write_text(USER_MODULE)
    base = {**TINY_BASE, "model": {"name": "usercode:tiny_net", "width": 8}, "data": {"name": "usercode:digits"}}
    space = write_space(trials=6, base=base, algorithms={"usercode:Jitter": {"std": {"range": [0.02, 0.1]}}})
    r = run_cli(["search", str(space), "--out", str(out), "--address", address,
                 "--storage", db, "--quiet", "--no-report"], env=ray_env)
    assert r.returncode == 0, r.stdout + r.stderr

    assert not (out / "study.db").exists()
    trials = optuna.load_study(study_name="tiny", storage=db).get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE"] * 6
    assert {t.user_attrs["node"] for t in trials} == {loopback_cluster.head, loopback_cluster.worker}
    assert len(pd.read_csv(out / "trials.csv")) == len(trials)
    meta = json.loads((out / "run.json").read_text())
    assert meta["ray_address"] == address and meta["cluster"]["nodes"] == 2 and meta["storage"] == db
    assert [m["module"] for m in meta["user_code"]] == ["usercode"] and meta["user_code"][0]["sha256"]
    assert any("usercode:Jitter" in str(t.user_attrs.get("algorithms")) for t in trials)
    # the driver only disconnected: the cluster is still up for the next search
    status = subprocess.run([loopback_cluster.ray, "status", f"--address={address}"], env=ray_env,
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr


# Losing the worker node mid-trial: tests/engine/test_checkpoint_resume.py (its trial goes on from a checkpoint).
