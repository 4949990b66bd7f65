"""The private Optuna and Ray APIs recipesearch/compat.py relies on are there, as it expects them: an upgrade that
moves one fails here, not as a search whose sampler quietly sees every trial or whose memory kills end Tune."""
from __future__ import annotations

from recipesearch import compat


def test_optunas_study_get_trials_is_as_the_sampler_view_expects():
    assert compat.optuna_private_api_problem() is None


def test_rays_actor_task_failed_is_as_the_memory_kill_patch_expects():
    assert compat.ray_private_api_problem() is None
    compat.memory_kills_are_actor_deaths()  # patched (or already): the check still sees the original's signature
    assert compat.ray_private_api_problem() is None


def test_the_sampler_view_leaves_out_what_keep_rejects():
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study()
    for x in (1.0, 2.0, 3.0):
        study.enqueue_trial({"x": x})
        study.optimize(lambda t: t.suggest_float("x", 0, 5), n_trials=1)
    view = compat.study_without(study, lambda t: t.params["x"] != 2.0)
    assert [t.params["x"] for t in view.get_trials()] == [1.0, 3.0]
    assert len(study.get_trials()) == 3
