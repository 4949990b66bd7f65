"""``recipesearch.functional``: every public function is documented (``Args:``, a doctest ``Example:``), every
example runs (this is how ``make test`` executes them), and every built-in method has a public function.

The package is one module per concept; the functions are found in its submodules (not through ``__all__``),
so one left out of ``__all__`` still has its documentation checked, and fails the ``__all__`` tests."""
from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import recipesearch.functional as functional
from recipesearch.algorithms import get_algorithm, list_algorithms

SUBMODULES: list[ModuleType] = [importlib.import_module(info.name) for info in
                                pkgutil.iter_modules(functional.__path__, prefix=f"{functional.__name__}.")]


def _public_functions(module: ModuleType) -> dict[str, object]:
    return {n: obj for n, obj in vars(module).items()
            if inspect.isfunction(obj) and obj.__module__ == module.__name__ and not n.startswith("_")}


# Public function name -> the submodule that defines it (a name defined twice fails the test below).
DEFINED: dict[str, ModuleType] = {n: m for m in SUBMODULES for n in _public_functions(m)}
PUBLIC = sorted(DEFINED)

# Built-in method -> its public functions here. A new method module fails the last test until it is listed.
METHOD_FUNCTIONS: dict[str, list[str]] = {
    "alternating_flip": ["alternating_flip_batch", "first_epoch_flips"],
    "bce_loss": ["bce_loss", "init_classifier_bias"],
    "blurpool": ["apply_blurpool"],
    "brightness_contrast": ["brightness_contrast_batch"],
    "bn_bias_lr": ["scale_bn_bias_grads"],
    "channels_last": ["apply_channels_last"],
    "colout": ["colout_batch"],
    "cutmix": ["cutmix_batch"],
    "cutout": ["cutout_batch"],
    "ema": ["ema_update", "ema_smoothing"],
    "flip_tta": ["flip_tta_logits", "flip_translate_tta_logits"],
    "ghost_batchnorm": ["apply_ghost_batchnorm"],
    "gradient_clipping": ["clip_gradients"],
    "label_smoothing": ["smooth_labels"],
    "layer_freezing": ["freeze_layers", "freeze_fraction"],
    "lookahead": ["lookahead_sync"],
    "mixed_precision": ["autocast_dtype"],
    "mixup": ["mixup_batch"],
    "patch_whitening": ["apply_patch_whitening", "whitening_filters"],
    "pool_before_norm": ["apply_pool_before_norm"],
    "progressive_resizing": ["progressive_resize", "resize_batch"],
    "randaugment": ["randaugment_batch"],
    "sam": ["sam_perturb", "sam_restore"],
    "selective_backprop": ["select_using_loss"],
    "proxy_selection": ["select_by_proxy"],
    "squeeze_excite": ["apply_squeeze_excite"],
    "stochastic_depth": ["apply_stochastic_depth"],
    "swa": ["recompute_bn"],
    "torch_compile": ["apply_torch_compile"],
    "translate": ["translate_batch"],
    "trivialaugment": ["trivialaugment_batch"],
}


def _function(name: str) -> object:
    return getattr(DEFINED[name], name)


def _docstring(name: str) -> str:
    return inspect.getdoc(_function(name)) or ""


def test_the_package_has_its_submodules() -> None:
    assert len(SUBMODULES) >= 2, "recipesearch.functional is no longer a package of submodules"
    assert _public_functions(functional) == {}, "define public functions in a submodule; __init__ re-exports"


def test_no_public_name_is_defined_twice() -> None:
    names = [n for m in SUBMODULES for n in _public_functions(m)]
    assert sorted(names) == PUBLIC


@pytest.mark.parametrize("module", SUBMODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_submodule_all_lists_exactly_its_public_functions(module: ModuleType) -> None:
    assert inspect.getdoc(module), f"{module.__name__}: no module docstring"
    assert sorted(getattr(module, "__all__", [])) == sorted(_public_functions(module))


def test_all_lists_exactly_the_public_functions() -> None:
    assert sorted(functional.__all__) == PUBLIC
    assert [n for n in PUBLIC if getattr(functional, n, None) is not _function(n)] == []
    namespace: dict[str, object] = {}
    exec("from recipesearch.functional import *", namespace)  # what users write
    assert sorted(n for n in namespace if not n.startswith("__")) == PUBLIC


@pytest.mark.parametrize("name", PUBLIC)
def test_public_function_has_args_and_a_doctest_example(name: str) -> None:
    doc = _docstring(name)
    assert "\nArgs:\n" in doc, f"{name}: no Args: section"
    params = [p for p in inspect.signature(_function(name)).parameters]
    args_section = doc.split("\nArgs:\n", 1)[1].split("\nExample:\n", 1)[0]
    missing = [p for p in params if f"{p}:" not in args_section]
    assert missing == [], f"{name}: Args: does not describe {missing}"
    assert "\nExample:\n" in doc, f"{name}: no Example: section"
    assert ">>> " in doc.split("\nExample:\n", 1)[1], f"{name}: its Example: has no doctest (>>>) line"


def _run(tests: list[doctest.DocTest]) -> tuple[int, int, str]:
    output: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test, out=output.append)
    return runner.tries, runner.failures, "".join(output)


def run_examples(obj: object, name: str, module: ModuleType) -> tuple[int, int, str]:
    """(examples run, failures, doctest's report) of ``obj``'s docstring, in ``module``'s namespace."""
    return _run(doctest.DocTestFinder().find(obj, name, globs=dict(vars(module))))


@pytest.mark.parametrize("name", PUBLIC)
def test_docstring_example_runs(name: str) -> None:
    tries, failures, report = run_examples(_function(name), name, DEFINED[name])
    assert tries > 0
    assert failures == 0, report


@pytest.mark.parametrize("module", SUBMODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_other_example_in_the_submodule_runs(module: ModuleType) -> None:
    # The module docstring's and any helper's; the public functions' run one by one above.
    tests = [t for t in doctest.DocTestFinder().find(module, module.__name__, globs=dict(vars(module)))
             if t.name.rsplit(".", 1)[-1] not in DEFINED]
    _, failures, report = _run(tests)
    assert failures == 0, report


def test_a_wrong_example_fails() -> None:
    def wrong() -> None:
        """Example:
            >>> smooth_labels(torch.tensor([0]), 2, 0.0)
            tensor([[0., 1.]])
        """

    tries, failures, report = run_examples(wrong, "wrong", DEFINED["smooth_labels"])
    assert (tries, failures) == (1, 1) and "tensor([[1., 0.]])" in report


def test_every_builtin_method_has_a_public_function() -> None:
    builtin = sorted(n for n in list_algorithms() if get_algorithm(n).__module__.startswith("recipesearch.algorithms."))
    assert sorted(METHOD_FUNCTIONS) == builtin
    listed = [f for functions in METHOD_FUNCTIONS.values() for f in functions]
    assert sorted(listed) == sorted(PUBLIC)
