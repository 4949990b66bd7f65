"""bench/search_cost.py: its section from saved results, and the arms' spaces."""
from __future__ import annotations

from pathlib import Path

import yaml

from bench import search_cost


def test_render_names_each_arms_cost_and_verdict():
    arm = {"arm": "today", "trials": 63, "verdict": "nothing beat the baseline to the target val acc 0.9784 (x): y",
           "confirmed": False, "speedup": None, "ci": None, "target": 0.9784, "elsewhere": "elsewhere ...",
           "payback": {"search_trainings": 45.0, "break_even_trainings": None,
                       "by_stage": {"tune": {"trainings": 2.2}, "confirm": {"trainings": 19.4}}}}
    confirmed = {**arm, "arm": "levers", "confirmed": True, "speedup": 2.0, "ci": [1.2, 3.0],
                 "verdict": "confirmed: ..",
                 "payback": {**arm["payback"], "search_trainings": 20.0, "break_even_trainings": 14.0}}
    text = search_cost.render({"arms": [arm, confirmed], "note": "one after the other"})
    assert "| today | 63 | - | 45.0 | sweep 2.2, confirmation 19.4 | nothing beat the baseline to the target val acc " \
           "0.9784 (x) (target 0.9784) | none | - |" in text
    assert "| levers | 63 | - | 20.0 |" in text and "confirmed 2.00x [1.20-3.00]" in text
    assert "| <= 20.0 | 14 trainings |" in text  # saved before the replay of its first claim: the whole search
    replayed = {**confirmed, "first_claim": {"trainings": 11.25, "run": 40, "verdict": "confirmed: .."}}
    assert "| 11.2 | 14 trainings |" in search_cost.render({"arms": [replayed]})
    assert text.endswith("Note: one after the other")


def test_each_arm_is_the_demo_space_with_its_changes(tmp_path):
    shipped = yaml.safe_load(search_cost._space(search_cost.ARMS["shipped"], tmp_path).read_text())
    assert shipped["budgets"] == [0.25, 0.5, 1] and shipped["search_budget"] == 30 and shipped["confirm"]["sequential"]
    assert search_cost._space(search_cost.ARMS["shipped"], tmp_path) == search_cost.SPACE  # no changes: as shipped
    before = yaml.safe_load(search_cost._space(search_cost.ARMS["before"], tmp_path).read_text())
    assert (tmp_path / before["base"]).resolve() == (search_cost.SPACE.parent / "../recipes/digits_baseline.yaml"
                                                     ).resolve()  # a changed copy points at the base it came with
    assert before["confirm"] == {"top_k": 5, "seeds": 3, "max_share": 0.55, "paired_baseline": "full"}
    assert before["budgets"] == [0.25, 0.5, 1, 2] and "search_budget" not in before
    fm = yaml.safe_load(search_cost._space(search_cost.ARMS["fashion_mnist_quick"], tmp_path).read_text())
    assert fm["base"]["data"]["subset"] == 0.25 and fm["search_budget"] == 30 and fm["budgets"] == [0.25, 0.5, 1]
    late = yaml.safe_load(search_cost._space(search_cost.ARMS["fashion_mnist_quick confirmed after the proposals"],
                                             tmp_path).read_text())
    assert late["confirm"] == {**fm["confirm"], "early": None, "stop_at_claim": False} and late["base"] == fm["base"]
    assert search_cost._space(search_cost.ARMS["byo"], tmp_path) == search_cost.BYO  # atelier/ is found beside it


def test_only_the_arms_asked_for_run_and_the_others_saved_results_stay(tmp_path, monkeypatch):
    ran = []

    class Headline:
        verdict, confirmed, speedup, speedup_ci_low, speedup_ci_high = "nothing beat", False, None, None, None
        baseline_accuracy, elsewhere = 0.97, ""

    def search(space, out, **kw):
        ran.append(Path(out).parent.name)
        (Path(out)).mkdir(parents=True)
        (Path(out) / "run.json").write_text('{"payback": {"search_trainings": 9.0}}')
        (Path(out) / "trials.csv").write_text("stage,is_baseline\nconfirm,True\nsearch,False\n")
        return type("R", (), {"headline": Headline, "trials": [1, 2]})()

    import recipesearch

    monkeypatch.setattr(recipesearch, "search", search)
    monkeypatch.setattr(search_cost, "load_result", lambda name: {"arms": [
        {"arm": "before", "trials": 63}, {"arm": "a retired lever", "trials": 7}]})
    result = search_cost.run(out=str(tmp_path), only=["shipped seed 1", "shipped"])
    assert ran == ["shipped_seed_1", "shipped"]  # in the order asked: a pair side by side
    # the table in ARMS' order; a retired arm's saved row stays, last
    assert [(a["arm"], a["trials"]) for a in result["arms"]] == [("before", 63), ("shipped", 2), ("shipped seed 1", 2),
                                                                 ("a retired lever", 7)]
    assert result["arms"][1]["paired_runs"] == 1
