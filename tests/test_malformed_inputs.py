"""Malformed and absurd inputs through the command line: exit 2, one line naming the field (and the line of
the file where there is one), no traceback, nothing written. The start of issue 16's corpus."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import call_cli

GOOD = (Path(__file__).parent / "tiny_recipe.yaml").read_text()  # the recipe test_cli.py trains


def call(capsys, *args: str) -> tuple[int, str]:
    code, out, err = call_cli(capsys, *args)
    return code, out + err


def alias_bomb(levels: int = 7) -> str:
    """'Billion laughs': each level a list of nine aliases of the one before (9**7 ~ 4.8 million leaves)."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n" + GOOD


RECIPES = [  # (name, recipe text, field named, words in the message, line)
    ("duplicate key", GOOD + "optimizer: {name: sgd, lr: 5.0}\n", "", "duplicate key 'optimizer'", 9),
    ("yes is not true", GOOD.replace("lr: 0.2", "lr: yes"), "optimizer.lr", "valid number", 3),
    ("alias bomb", alias_bomb(), "", "aliases", 2),
    ("deep nesting", "[" * 5000 + "]" * 5000 + "\n", "", "nested too deeply", None),
    ("python tag", GOOD + "name: !!python/object/apply:os.system [echo hi]\n", "", "constructor", 9),
    ("seed past numpy's range", GOOD + "seed: 1180591620717411303424\n", "seed", "less than 4294967296", 9),
    ("negative seed", GOOD + "seed: -1\n", "seed", "greater than or equal to 0", 9),
    ("warmup longer than the run", GOOD.replace("warmup_epochs: 0.2", "warmup_epochs: 100"),
     "schedule.warmup_epochs", "100 epochs of warmup in a 1-epoch run", 4),
    ("huge batch", GOOD.replace("batch_size: 32", "batch_size: 1000000000"), "batch_size", "65536", 6),
    ("tiny budget", GOOD + "budget: 1.0e-9\n", "budget", "0.001", 9),
    ("huge budget", GOOD + "budget: 1.0e+9\n", "budget", "1000", 9),
    ("a million epochs", GOOD.replace("max_duration: 1", "max_duration: 1000000"), "max_duration", "10000", 5),
    ("epochs x budget", GOOD.replace("max_duration: 1", "max_duration: 9000") + "budget: 2\n", "budget",
     "18000 epochs", None),
    ("negative crop padding", GOOD.replace("{name: digits}", "{name: digits, crop_padding: -1}"),
     "data.crop_padding", "between 0 and 512", 2),
    ("channels on digits", GOOD.replace("{name: digits}", "{name: digits, channels: 1}"), "data.channels",
     "only imagefolder", 2),
]


@pytest.mark.parametrize("name,text,field,words,line", RECIPES, ids=[r[0] for r in RECIPES])
def test_bad_recipes_are_one_line_errors_and_write_nothing(tmp_path, capsys, name, text, field, words, line):
    recipe, out = tmp_path / "r.yaml", tmp_path / "out"
    recipe.write_text(text)
    code, printed = call(capsys, "train", str(recipe), "--out", str(out))
    assert code == 2, printed
    assert printed.startswith("error: ") and printed.count("\n") == 1 and "Traceback" not in printed, printed
    where = f"{recipe}:{line}: " if line else f"{recipe}"
    assert printed.startswith(f"error: {where}"), printed
    assert (f"{field}: " in printed if field else True) and words in printed, printed
    assert not out.exists()


SETS = [  # --set values: (value, words)
    ("optimizer.lr=[1", "invalid YAML"),
    ("name=a: b: c", "invalid YAML"),
    ("name=!!python/object/apply:os.system [echo hi]", "constructor"),
    ("optimizer.lr=yes", "valid number"),
    ("seed=2e70", "seed"),
    ("budget=1e9", "budget"),
    ("data.hflip=maybe", "data.hflip"),
]


@pytest.mark.parametrize("override,words", SETS, ids=[s[0] for s in SETS])
def test_bad_set_values_are_one_line_errors(tmp_path, capsys, override, words):
    recipe, out = tmp_path / "r.yaml", tmp_path / "out"
    recipe.write_text(GOOD)
    code, printed = call(capsys, "train", str(recipe), "--set", override, "--out", str(out))
    assert code == 2 and printed.count("\n") == 1 and "Traceback" not in printed, printed
    assert "--set" in printed and words in printed, printed
    assert not out.exists()


def test_a_space_with_a_duplicate_key_names_its_line(tmp_path, capsys):
    space = tmp_path / "s.yaml"
    space.write_text(f"base: {Path(__file__).resolve().parents[1] / 'recipes/digits_baseline.yaml'}\n"
                     "seed: 5\nseed: 6\n")
    code, printed = call(capsys, "search", str(space), "--out", str(tmp_path / "run"))
    assert code == 2 and printed == f"error: {space}:3: invalid YAML: duplicate key 'seed': it is given twice\n"
    assert not (tmp_path / "run").exists()


def test_a_storage_password_is_never_shown(tmp_path, capsys):
    space = tmp_path / "s.yaml"
    space.write_text(f"base: {Path(__file__).resolve().parents[1] / 'recipes/digits_baseline.yaml'}\n")
    out = tmp_path / "run"
    for url in ("postgresql://u:secret@127.0.0.1:1/db", "postgresql://u:se@cret@127.0.0.1:1/db", "nosuch://u:secret@x"):
        code, printed = call(capsys, "search", str(space), "--out", str(out), "--storage", url)
        assert code == 2 and printed.count("\n") == 1 and "--storage" in printed, printed
        assert "secret" not in printed and "cret" not in printed and "u:***@" in printed, printed
        assert not out.exists()


def _digits_space(tmp_path, extra: str = "") -> Path:
    space = tmp_path / "s.yaml"
    space.write_text(f"base: {Path(__file__).resolve().parents[1] / 'recipes/digits_baseline.yaml'}\n{extra}")
    return space


@pytest.mark.parametrize("flags,words", [
    (["--out", "/proc/x"], "--out: cannot create /proc/x"),
    (["--address", "notanaddress"], "--address: expected HOST:PORT"),
    (["--address", "ray://:10001"], "--address: expected HOST:PORT"),
    (["--report-every", "-1"], "--report-every"),
    (["--report-every", "two"], "--report-every"),
], ids=["out in /proc", "address without port", "address without host", "negative report-every", "report-every text"])
def test_bad_search_flags_are_refused_before_anything_starts(tmp_path, capsys, flags, words):
    args = ["search", str(_digits_space(tmp_path))]
    args += flags if flags[0] == "--out" else ["--out", str(tmp_path / "run"), *flags]
    code, printed = call(capsys, *args)
    assert code == 2 and words in printed and "Traceback" not in printed, printed
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("option,words", [
    ("n_startup_trials: -3", "must be >= 0"), ("n_startup_trials: 2.5", "an integer"),
    ("n_ei_candidates: 0", "must be >= 1"), ("multivariate: 1", "true or false"),
])
def test_bad_sampler_options_name_the_option(tmp_path, capsys, option, words):
    space = _digits_space(tmp_path, f"sampler: {{name: tpe, {option}}}\n")
    code, printed = call(capsys, "search", str(space), "--out", str(tmp_path / "run"))
    assert code == 2 and f"sampler.{option.split(':')[0]}: " in printed and words in printed, printed
    assert printed.startswith(f"error: {space}:2: ")


def test_train_refuses_an_out_that_is_a_file_before_training(tmp_path, capsys):
    recipe, out = tmp_path / "r.yaml", tmp_path / "out"
    recipe.write_text(GOOD)
    out.write_text("not a directory")
    code, printed = call(capsys, "train", str(recipe), "--out", str(out))
    assert code == 2 and printed == f"error: --out: {out} exists and is not a directory\n"
    assert out.read_text() == "not a directory"


@pytest.mark.parametrize("data,field,words", [
    ("{name: fashion_mnist, root: /nonexistent/dir}", "", "files not found in /nonexistent/dir"),
    ("{name: digits, subset: 1.0e-6}", "data.subset", "fewer than the 10 classes"),
], ids=["fashion-mnist root that does not exist", "subset of less than one image per class"])
def test_data_that_cannot_be_meant_is_refused(tmp_path, capsys, data, field, words):
    recipe, out = tmp_path / "r.yaml", tmp_path / "out"
    recipe.write_text(GOOD.replace("data: {name: digits}", f"data: {data}"))
    code, printed = call(capsys, "train", str(recipe), "--out", str(out))
    assert code == 2 and printed.count("\n") == 1 and words in printed and "Traceback" not in printed, printed
    assert (f"{field}: " in printed) if field else True
    assert not out.exists()
