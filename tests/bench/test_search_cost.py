"""bench/search_cost.py: its section from saved results, and the arms' spaces."""
from __future__ import annotations

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
    assert "| 20.0 | 14 trainings |" in text
    assert text.endswith("Note: one after the other")


def test_each_arm_is_the_demo_space_with_its_changes(tmp_path):
    shipped = yaml.safe_load(search_cost._space(search_cost.ARMS["shipped"], tmp_path).read_text())
    assert shipped["budgets"] == [0.25, 0.5, 1] and shipped["search_budget"] == 30 and shipped["confirm"]["sequential"]
    assert (tmp_path / shipped["base"]).resolve() == (search_cost.SPACE.parent / "../recipes/digits_baseline.yaml"
                                                      ).resolve()
    before = yaml.safe_load(search_cost._space(search_cost.ARMS["before"], tmp_path).read_text())
    assert before["confirm"] == {"top_k": 5, "seeds": 3, "max_share": 0.55, "paired_baseline": "full"}
    assert before["budgets"] == [0.25, 0.5, 1, 2] and "search_budget" not in before
