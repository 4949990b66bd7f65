"""Issue 32 item 7: every combination a space's trials can reach is checked when the space loads, not trial by
trial: batch sizes against resources.workers, flip_tta against the data, schedulers that could do nothing.
Bad input is one ConfigError naming the field (and line); a setting that does nothing is one warning line."""
from __future__ import annotations

import pytest

from recipesearch.cli import main
from recipesearch.errors import ConfigError
from recipesearch.space import load_space, loads_space

BASE = """\
base:
  model: {name: cnn, width: 8}
  data: {name: digits}
  max_duration: 2
  batch_size: 64
  device: cpu
budgets: [0.5, 1]
trials: 8
"""


def refused(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        loads_space(text, source="s.yaml")
    assert "\n" not in str(info.value)
    return info.value


def line_of(text: str, start: str) -> int:
    """The line of the last line starting with ``start`` (the space's own keys come after its base)."""
    return max(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(start))


# -- resources.workers and every batch_size the space can sample -----------------------------------------
WORKERS = [
    # (resources, hparams.batch_size, words in the message)
    ("{workers: 2}", "{choices: [63, 65]}", "batch_size 63 (of the batch sizes it samples: 63, 65, 64)"),
    ("{workers: 2}", "{choices: [64, 65]}", "batch_size 65"),
    ("{workers: 4}", "{grid: [0.3, 1]}", "batch_size 19"),  # 64 x 0.3 rounds to 19
    ("{workers: 2}", "{range: [32, 128]}", "every batch_size from 32 to 128, and 33"),
    ("{workers: 2}", "{scale: [0.5, 2]}", "every batch_size from 32 to 128, and 33"),
    ("{workers: 4}", "{range: [60, 68]}", "every batch_size from 60 to 68, and 61"),
]


@pytest.mark.parametrize("resources,batch,words", WORKERS, ids=[f"{w[0]}-{w[1]}" for w in WORKERS])
def test_a_batch_size_the_workers_cannot_share_is_refused_at_load(resources, batch, words):
    text = BASE + f"resources: {resources}\nhparams:\n  batch_size: {batch}\n"
    exc = refused(text)
    assert exc.field == "hparams.batch_size" and exc.line == line_of(text, "  batch_size:")
    assert words in exc.message and "resources.workers" in exc.message, exc.message


@pytest.mark.parametrize("batch", ["{choices: [32, 64, 128]}", "{grid: [0.5, 1, 2]}",
                                   "{scale: [1, 1.004]}"])  # 64 x 1.004 rounds to 64: one batch size
def test_batch_sizes_that_divide_are_accepted(batch):
    space = loads_space(BASE + f"resources: {{workers: 2}}\nhparams:\n  batch_size: {batch}\n")
    assert space.resources.workers == 2


def test_one_worker_samples_any_batch_size():
    assert loads_space(BASE + "hparams:\n  batch_size: {choices: [63, 65]}\n").resources.workers == 1


def test_the_base_batch_size_is_still_named_by_resources_workers():
    exc = refused(BASE.replace("batch_size: 64", "batch_size: 63") + "resources: {workers: 2}\n")
    assert exc.field == "resources.workers" and "batch_size 63" in exc.message


# -- flip_tta and the data it would evaluate -------------------------------------------------------------
FLIP_MESSAGE = "dataset digits does not allow a horizontal flip (a mirrored image may be another class)"


def test_flip_tta_on_digits_is_refused_at_load_as_train_refuses_it():
    text = BASE + "algorithms:\n  mixup: {}\n  flip_tta: {}\n"
    exc = refused(text)
    assert exc.field == "algorithms.flip_tta" and exc.line == line_of(text, "  flip_tta:")
    assert FLIP_MESSAGE in exc.message and "every trial with flip_tta on would fail" in exc.message


def test_flip_tta_always_on_or_in_the_base_is_refused_too():
    assert refused(BASE + "algorithms:\n  flip_tta: {always: true}\n").field == "algorithms.flip_tta"
    base_has_it = BASE.replace("  device: cpu\n", "  device: cpu\n  algorithms: {flip_tta: {}}\n")
    exc = refused(base_has_it)
    assert exc.field.endswith("algorithms.flip_tta") and "digits" in exc.message


def test_flip_tta_where_a_sampled_data_hflip_can_be_false_is_refused():
    flips = BASE.replace("data: {name: digits}", "data: {name: digits, hflip: true}")
    exc = refused(flips + "hparams:\n  data.hflip: {choices: [true, false]}\nalgorithms:\n  flip_tta: {}\n")
    assert exc.field == "algorithms.flip_tta" and "with data.hflip false" in exc.message
    exc = refused(BASE.replace("data: {name: digits}", "data: {name: fashion_mnist, hflip: false}")
                  + "algorithms:\n  flip_tta: {}\n")
    assert "dataset fashion_mnist with data.hflip false" in exc.message


def test_flip_tta_that_can_run_unforced_is_refused():
    exc = refused(BASE + "algorithms:\n  flip_tta: {force: {choices: [true, false]}}\n")
    assert exc.field == "algorithms.flip_tta"


@pytest.mark.parametrize("text", [
    BASE.replace("data: {name: digits}", "data: {name: digits, hflip: true}") + "algorithms:\n  flip_tta: {}\n",
    BASE + "algorithms:\n  flip_tta: {force: true}\n",
    BASE.replace("data: {name: digits}", "data: {name: fashion_mnist}") + "algorithms:\n  flip_tta: {}\n",
], ids=["hflip-true", "force", "fashion_mnist"])
def test_flip_tta_where_a_mirror_keeps_the_class_is_accepted(text):
    assert "flip_tta" in loads_space(text).algorithms


def test_the_dataset_table_agrees_with_the_loaders():
    from recipesearch.data import DataSpec, get_dataset
    from recipesearch.data.registry import registered_loaders
    from recipesearch.space.loading import DATASET_HFLIP

    assert set(DATASET_HFLIP) <= set(registered_loaders())
    # digits is embedded (no files): its loader says it; the others need their files (cifar10, fashion_mnist)
    assert get_dataset("digits")(DataSpec(name="digits")).hflip is DATASET_HFLIP["digits"]


def test_the_train_command_refuses_the_same_recipe(tmp_path, capsys):
    """The space's refusal is train's: the same words (here from flip_tta's own check at INIT)."""
    recipe = tmp_path / "r.yaml"
    recipe.write_text("model: {name: cnn, width: 8}\ndata: {name: digits}\nmax_duration: 1\ndevice: cpu\n"
                      "algorithms: {flip_tta: {}}\n")
    assert main(["train", str(recipe), "--quiet"]) == 2
    assert FLIP_MESSAGE in capsys.readouterr().err


# -- schedulers that could do nothing --------------------------------------------------------------------
def test_moasha_without_a_rung_is_refused_naming_min_fraction():
    text = BASE + "scheduler: {name: moasha, min_fraction: 0.9}\n"
    exc = refused(text)
    assert exc.field == "scheduler.min_fraction" and exc.line == line_of(text, "scheduler:")
    assert exc.message == ("0.9 leaves moasha no rung: rungs are at 1/3, 1/3^2, ... of a trial's steps down to "
                           "min_fraction, so it must be at most 1/3 = 0.3333")


def test_moasha_without_a_rung_at_the_default_min_fraction_names_reduction_factor():
    exc = refused(BASE + "scheduler: {name: moasha+promote, reduction_factor: 10}\n")
    assert exc.field == "scheduler.reduction_factor"
    assert "min_fraction 0.1111 (the default)" in exc.message and "at most 0.1" in exc.message


@pytest.mark.parametrize("scheduler", ["moasha", "{name: moasha, min_fraction: 0.3333}",
                                       "{name: moasha, reduction_factor: 2, min_fraction: 0.5}"])
def test_moasha_with_a_rung_is_accepted(scheduler):
    assert loads_space(BASE + f"scheduler: {scheduler}\n").scheduler.rungs()


def test_scheduler_moasha_from_the_command_line_is_checked_too():
    space = loads_space(BASE + "scheduler: {name: fifo, min_fraction: 0.9}\n", source="s.yaml")
    with pytest.raises(ConfigError) as info:
        space.with_scheduler(name="moasha")
    assert info.value.field == "scheduler.min_fraction" and "no rung" in info.value.message


def test_promote_with_one_budget_is_a_warning_printed_once_at_load(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    text = BASE.replace("budgets: [0.5, 1]", "budgets: [1]") + "scheduler: promote\n"
    path.write_text(text)
    space = load_space(path)
    expected = (f"warning: {path}:{line_of(text, 'scheduler:')}: scheduler: promote with one budget (1): promotion "
                "moves the best proposals up to the next budget and there is none, so nothing is promoted (it runs "
                "as fifo); list more budgets or drop promote\n")
    assert capsys.readouterr().err == expected
    assert space.warnings == (expected.removeprefix("warning: ").rstrip("\n"),)
    loads_space(text)  # kept on the space, printed by load_space only (a resume's hash check loads it again)
    assert capsys.readouterr().err == ""


def test_promote_from_the_command_line_on_one_budget_warns(capsys):
    space = loads_space(BASE.replace("budgets: [0.5, 1]", "budgets: [1]"))
    promoted = space.with_scheduler(name="moasha+promote")
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("warning: scheduler: moasha+promote with one budget (1)")
    assert "(it runs as moasha)" in err and promoted.warnings and not space.warnings


@pytest.mark.parametrize("scheduler,field,words", [
    ("{name: promote, min_fraction: 0.2}", "scheduler.min_fraction", "does nothing with scheduler promote"),
    ("{name: fifo, min_fraction: 0.2}", "scheduler.min_fraction", "does nothing with scheduler fifo"),
    ("{reduction_factor: 4}", "scheduler.reduction_factor", "does nothing with scheduler fifo"),
])
def test_scheduler_settings_that_do_nothing_warn(scheduler, field, words):
    (warning,) = loads_space(BASE + f"scheduler: {scheduler}\n", source="s.yaml").warnings
    assert warning.startswith(f"s.yaml:9: {field}: ") and words in warning


@pytest.mark.parametrize("scheduler", ["fifo", "promote", "{name: promote, reduction_factor: 2}",
                                       "{name: moasha, min_fraction: 0.2}"])
def test_schedulers_that_do_what_they_say_have_no_warning(scheduler):
    assert loads_space(BASE + f"scheduler: {scheduler}\n").warnings == ()


# -- a one-class image folder ----------------------------------------------------------------------------
def test_an_image_folder_of_one_class_is_refused_at_load(tmp_path):
    from PIL import Image

    for split in ("train", "test"):
        (tmp_path / split / "cats").mkdir(parents=True)
        Image.new("RGB", (8, 8)).save(tmp_path / split / "cats" / "0.png")
    text = BASE.replace("data: {name: digits}", f"data: {{name: imagefolder, root: '{tmp_path}'}}")
    exc = refused(text)
    assert exc.field == "base.data.root"
    assert exc.message.startswith(f"imagefolder: {tmp_path / 'train'} has 1 class folder (cats): a classifier needs "
                                  "at least 2 classes")


def test_an_image_folder_that_is_not_here_is_left_to_the_trials(tmp_path):
    text = BASE.replace("data: {name: digits}", f"data: {{name: imagefolder, root: '{tmp_path / 'on-the-nodes'}'}}")
    assert loads_space(text).base.data.name == "imagefolder"


# -- the shipped spaces stay as they were ----------------------------------------------------------------
def test_shipped_spaces_load_without_warnings(capsys):
    from pathlib import Path

    for path in sorted((Path(__file__).resolve().parents[2] / "search_spaces").glob("*.yaml")):
        assert load_space(path).warnings == (), path
    assert capsys.readouterr().err == ""


def test_alternating_flip_on_digits_is_refused_at_load_as_flip_tta_is():
    import yaml

    from recipesearch.errors import ConfigError
    from recipesearch.space import loads_space

    space = {"name": "x", "base": {"model": {"name": "cnn"}, "data": {"name": "digits"}, "max_duration": 1},
             "budgets": [1], "trials": 3, "baseline": {"seeds": 1}, "algorithms": {"alternating_flip": {}}}
    with pytest.raises(ConfigError, match="algorithms.alternating_flip: dataset digits does not allow"):
        loads_space(yaml.safe_dump(space))
    space["algorithms"] = {"alternating_flip": {"force": True}}  # a control run: accepted, as train accepts it
    loads_space(yaml.safe_dump(space))
