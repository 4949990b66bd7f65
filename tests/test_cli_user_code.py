"""The CLI with a user's own code: bad import paths and broken user code are one line and exit 2 before
anything trains or is written; a changed user module is named when a recipe is replayed or a search resumed."""
from __future__ import annotations

import json

import pytest
import yaml

from recipesearch.plugins import provenance_lines
from tests.test_cli import call_cli

RECIPE = {"model": {"name": "cnn", "width": 8}, "data": {"name": "digits"}, "max_duration": 1, "batch_size": 64,
          "threads": 1, "device": "cpu"}




def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@pytest.mark.parametrize(("model", "words"), [
    ("surely_missing_pkg_xyz.nets:net", "model.name: cannot import 'surely_missing_pkg_xyz.nets': no such module"),
    ("os.path:join", "must accept num_classes, in_channels, image_size"),
    ("os:sep", "is a str, not a model factory"),
])
def test_train_with_a_bad_import_path(capsys, tmp_path, model, words):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump({**RECIPE, "model": {"name": model}}))
    code, _, err = call_cli(capsys, "train", str(recipe))
    assert code == 2 and words in _one_error_line(err)


def test_a_plugin_registering_a_taken_name_is_refused_before_the_run_dir(capsys, tmp_path, user_module):
    name = user_module("""
        from torch import nn
        from recipesearch.models import register_model

        @register_model("resnet8")
        def mine(num_classes, in_channels, image_size):
            return nn.Identity()
        """)
    space = tmp_path / "space.yaml"
    space.write_text(yaml.safe_dump({"name": "s", "base": RECIPE, "budgets": [1], "trials": 2,
                                     "baseline": {"seeds": 1}}))
    out = tmp_path / "run"
    code, _, err = call_cli(capsys, "search", str(space), "--out", str(out), "--plugin", name, "--executor",
                            "inprocess", "--quiet")
    line = _one_error_line(err)
    assert code == 2 and f"importing '{name}' failed: ValueError: model 'resnet8' is already registered" in line
    assert not out.exists()


def test_a_dataset_with_bad_labels_is_refused_before_the_run_dir(capsys, tmp_path, user_module):
    name = user_module("""
        import torch
        from torch.utils.data import TensorDataset

        def load():
            x = torch.rand(20, 1, 8, 8)
            return {"train": TensorDataset(x, torch.arange(20) % 3), "test": TensorDataset(x, torch.arange(20) % 4)}
        """)
    space = tmp_path / "space.yaml"
    space.write_text(yaml.safe_dump({"name": "s", "base": {**RECIPE, "data": {"name": f"{name}:load"}},
                                     "budgets": [1], "trials": 2, "baseline": {"seeds": 1}}))
    out = tmp_path / "run"
    code, _, err = call_cli(capsys, "search", str(space), "--out", str(out), "--executor", "inprocess", "--quiet")
    assert code == 2 and "test item 3 has label 3, outside 0..2 (3 classes)" in _one_error_line(err)
    assert not out.exists()


def test_replaying_an_exported_recipe_names_a_changed_module(capsys, tmp_path, user_module):
    name = user_module("""
        from torch import nn

        def net(num_classes, in_channels, image_size):
            return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size ** 2, num_classes))
        """)
    from recipesearch import plugins

    plugins.resolve(f"{name}:net", "model.name")
    header = "".join(f"# {line}\n" for line in ["recipesearch frontier recipe x", *provenance_lines(
        plugins.provenance([name]))])
    recipe = tmp_path / "exported.yaml"
    recipe.write_text(header + yaml.safe_dump({**RECIPE, "model": {"name": f"{name}:net"}, "max_duration": 0.2}))
    code, _, err = call_cli(capsys, "train", str(recipe), "--quiet")
    assert code == 0 and "changed since" not in err
    module_file = tmp_path / "usercode" / f"{name}.py"
    module_file.write_text(module_file.read_text() + "\n# tuned\n")
    code, _, err = call_cli(capsys, "train", str(recipe), "--quiet")
    assert code == 0 and f"user module(s) {name} changed since this recipe was exported" in err


def test_resume_names_a_changed_module(capsys, tmp_path, user_module):
    name = user_module("""
        from torch import nn

        def net(num_classes, in_channels, image_size):
            return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size ** 2, num_classes))
        """)
    space = tmp_path / "space.yaml"
    space.write_text(yaml.safe_dump({"name": "s", "base": {**RECIPE, "model": {"name": f"{name}:net"}},
                                     "budgets": [1], "trials": 1, "baseline": {"seeds": 1}, "confirm": False,
                                     "metric_split": "test"}))
    out = tmp_path / "run"
    args = ["search", str(space), "--out", str(out), "--executor", "inprocess", "--quiet", "--no-report"]
    assert call_cli(capsys, *args)[0] == 0
    recorded = json.loads((out / "run.json").read_text())["user_code"]
    assert [r["module"] for r in recorded] == [name]
    module_file = tmp_path / "usercode" / f"{name}.py"
    module_file.write_text(module_file.read_text() + "\n# tuned\n")
    code, out_text, err = call_cli(capsys, *args, "--resume", "--trials", "2")
    assert code == 0, err
    assert f"user module(s) {name} changed since this search recorded them" in out_text + err
