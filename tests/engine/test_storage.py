"""The study's objective names say what they hold: a search selecting on validation tells Optuna val_accuracy."""
from __future__ import annotations

import warnings

import optuna
import pytest

from recipesearch.engine.storage import make_storage, open_study


def _open(space, url: str, resuming: bool = False) -> optuna.Study:
    return open_study(space, make_storage(url), optuna.samplers.RandomSampler(seed=0), resuming=resuming)


@pytest.mark.parametrize(("split", "names"), [("val", ["val_accuracy", "train_seconds"]),
                                               ("test", ["accuracy", "train_seconds"])])
def test_a_new_study_names_its_objectives_by_the_column_selected_on(make_space, tmp_path, split, names):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    _open(make_space(metric_split=split), url)
    assert optuna.load_study(study_name="tiny", storage=url).metric_names == names


def test_a_resumed_study_keeps_the_names_it_was_created_with(make_space, tmp_path):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    old = optuna.create_study(storage=url, study_name="tiny", directions=["maximize", "minimize"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        old.set_metric_names(["accuracy", "train_seconds"])  # what a study written before the names changed has
    study = _open(make_space(metric_split="val"), url, resuming=True)
    assert study.metric_names == ["accuracy", "train_seconds"]
    assert optuna.load_study(study_name="tiny", storage=url).metric_names == ["accuracy", "train_seconds"]
