"""Fuzzed search spaces and recipes (hypothesis): any change to any field either loads or is a one-line
ConfigError naming a field; never another exception, a traceback or a hang. Issue 16's corpus, generated."""
from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recipesearch.errors import ConfigError
from recipesearch.recipe import recipe_from_dict
from recipesearch.space import space_from_dict

ROOT = Path(__file__).resolve().parents[1]
SPACE = yaml.safe_load((ROOT / "search_spaces/digits.yaml").read_text())
SPACE["base"] = yaml.safe_load((ROOT / "recipes/digits_baseline.yaml").read_text())  # inline: fuzzed too
RECIPE = copy.deepcopy(SPACE["base"])

VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.sampled_from(["", "auto", "tpe", "val", "resnet8", "mixup", "1e9", "-1", "0"]),
    st.lists(st.one_of(st.integers(-5, 5), st.floats(-5, 5), st.text(max_size=3)), max_size=4),
    st.dictionaries(st.text(max_size=6), st.one_of(st.integers(-3, 3), st.text(max_size=3)), max_size=3),
)


def paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path of a nested mapping/list (the places a fuzzed value can go)."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += paths(v, (*prefix, i))
    return out


def mutate(doc: dict, path: tuple, how: str, value: Any) -> dict:
    doc = copy.deepcopy(doc)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if how == "delete" and isinstance(parent, dict):
        del parent[last]
    elif how == "unknown key" and isinstance(parent, dict):
        parent[f"{last}_typo"] = value
    else:
        parent[last] = value
    return doc


def one_line_config_error(load: Any, doc: dict) -> None:
    try:
        load(doc)
    except ConfigError as exc:
        message = str(exc)
        assert message and "\n" not in message and "Traceback" not in message, message
        assert exc.field is not None
    except RecursionError:  # pragma: no cover - would be a bug: reported as such
        pytest.fail("RecursionError")


# FUZZ_EXAMPLES=2000 explores further with fresh random draws; the suite replays the same 150 each time.
EXAMPLES = os.environ.get("FUZZ_EXAMPLES")
FUZZ = settings(max_examples=int(EXAMPLES or 150), deadline=None, derandomize=EXAMPLES is None,
                suppress_health_check=list(HealthCheck))


@FUZZ
@given(path=st.sampled_from(paths(SPACE)), how=st.sampled_from(["set", "delete", "unknown key"]), value=VALUES)
def test_a_fuzzed_space_loads_or_is_one_line(path, how, value):
    doc = mutate(SPACE, path, how, value)
    one_line_config_error(lambda d: space_from_dict(d, "fuzz.yaml", base_dir=ROOT / "search_spaces"), doc)


@FUZZ
@given(path=st.sampled_from(paths(RECIPE)), how=st.sampled_from(["set", "delete", "unknown key"]), value=VALUES)
def test_a_fuzzed_recipe_loads_or_is_one_line(path, how, value):
    one_line_config_error(lambda d: recipe_from_dict(d, "fuzz.yaml"), mutate(RECIPE, path, how, value))


@FUZZ
@given(text=st.text(alphabet=st.sampled_from(list("abc:-[]{}&*!|>'\"#%@ \n\t0123456789.")), max_size=80))
def test_any_text_is_yaml_or_a_one_line_error(text):
    from recipesearch.yamlio import parse_yaml

    try:
        parse_yaml(text, "fuzz.yaml")
    except ConfigError as exc:
        assert "\n" not in str(exc)

