"""recipesearch/user_entries.py: the user's registered entries, the modules of user code in use, a module's offer."""
from __future__ import annotations

from recipesearch import plugins
from recipesearch.user_entries import module_entries, user_modules


def test_user_modules_leave_out_the_stdlib_and_recipesearch(user_module):
    name = user_module("VALUE = 41\n")
    plugins.resolve(f"{name}:VALUE", "model.name")
    assert user_modules([name, "os.path", "recipesearch.models"]) == [name]  # not the stdlib's, not ours


def test_module_entries_lists_what_a_module_offers(user_module):
    name = user_module('''
        from pydantic import BaseModel
        from torch import nn
        from recipesearch.algorithms import Algorithm
        from recipesearch.hooks.events import Event

        def net(num_classes, in_channels, image_size, width=4):
            return nn.Linear(1, 1)

        def load(fraction=1.0):
            return None

        class Trick(Algorithm):
            name, description, citation = "trick", "d", "c"
            events = frozenset({Event.AFTER_DATALOADER})
            def apply(self, event, state):
                pass
        ''')
    assert module_entries(name, "model") == [f"{name}:net"]
    assert module_entries(name, "algorithm") == [f"{name}:Trick"]
    assert f"{name}:load" in module_entries(name, "dataset")
