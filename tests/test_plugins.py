"""recipesearch/plugins.py: import paths resolved, user code recognised and described, its provenance read back."""
from __future__ import annotations

import pytest

from recipesearch import plugins
from recipesearch.errors import ConfigError, UserError
from recipesearch.recipe import dotted_parts


def test_import_path_shapes():
    assert plugins.is_import_path("acme.nets:tiny") and not plugins.is_import_path("resnet8")
    assert plugins.looks_like_import_path("acme.nets:Tiny.factory")
    for text in ("12:30", "postgresql://host/db", "a b:c", ":x", "x:"):
        assert not plugins.looks_like_import_path(text), text


def test_resolve_returns_the_attribute(user_module):
    name = user_module("VALUE = 41\nclass Box:\n    inner = 'x'\n")
    assert plugins.resolve(f"{name}:VALUE", "model.name") == 41
    assert plugins.resolve(f"{name}:Box.inner", "model.name") == "x"


@pytest.mark.parametrize(("path", "words"), [
    ("no colon here:", "not an import path"),
    ("bad path:x", "not an import path"),
    ("surely_missing_module_xyz:f", "no such module"),
])
def test_resolve_errors_are_one_line_naming_the_field(path, words):
    with pytest.raises(ConfigError) as info:
        plugins.resolve(path, "model.name")
    assert info.value.field == "model.name" and words in str(info.value) and "\n" not in str(info.value)


def test_missing_attribute_and_a_module_that_raises(user_module):
    good = user_module("x = 1\n")
    with pytest.raises(ConfigError, match="has no attribute 'nope'"):
        plugins.resolve(f"{good}:nope", "data.name")
    bad = user_module("raise RuntimeError('no GPU here')\n")
    with pytest.raises(ConfigError, match=r"importing .* failed: RuntimeError: no GPU here \(at "):
        plugins.resolve(f"{bad}:x", "data.name")
    # a module importing something missing is the module's error, not 'no such module'
    broken = user_module("import surely_missing_dependency_xyz\n")
    with pytest.raises(ConfigError, match="ModuleNotFoundError"):
        plugins.resolve(f"{broken}:x", "data.name")


def test_import_plugins_rejects_what_is_not_a_module_name():
    with pytest.raises(UserError, match="plugins: 3 is not a module name"):
        plugins.import_plugins([3])


def test_dotted_keys_keep_an_import_path_whole():
    assert dotted_parts("algorithms.acme.tricks:Noise.std") == ["algorithms", "acme.tricks:Noise", "std"]
    assert dotted_parts("optimizer.lr") == ["optimizer", "lr"]


def test_provenance_records_hash_and_notices_a_change(user_module, tmp_path):
    name = user_module("A = 1\n")
    plugins.resolve(f"{name}:A", "x")
    rows = plugins.provenance([name])
    assert rows[0]["module"] == name and len(rows[0]["sha256"]) == 16 and rows[0]["version"] is None
    assert plugins.changed_modules(rows) == []
    (tmp_path / "usercode" / f"{name}.py").write_text("A = 2\n")
    assert plugins.changed_modules(rows) == [name]
    assert name in plugins.changed_warning(rows, "this recipe was exported")
    # a module that no longer imports counts as changed
    assert plugins.changed_modules([{"module": "surely_gone_module_xyz", "sha256": "ab"}]) == ["surely_gone_module_xyz"]


def test_provenance_lines_read_back_and_name_their_folder(tmp_path):
    pkg = tmp_path / "proj" / "acme"
    pkg.mkdir(parents=True)
    (pkg / "nets.py").write_text("")
    rows = [{"module": "acme.nets", "sha256": "0123456789abcdef", "version": None, "file": str(pkg / "nets.py")},
            {"module": "vendor", "sha256": None, "version": "1.2", "file": "/site-packages/vendor/__init__.py"}]
    text = "".join(f"# {line}\n" for line in ["header", *plugins.provenance_lines(rows)]) + "model: {name: x}\n"
    assert plugins.parse_provenance(text) == rows
    assert plugins.user_code_dirs(rows) == [str(tmp_path / "proj")]  # installed ones import as they are
