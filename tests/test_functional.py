"""``recipesearch.functional``: every public function is documented (``Args:``, a doctest ``Example:``), every
example runs (this is how ``make test`` executes them), and every built-in method has a public function."""
from __future__ import annotations

import doctest
import inspect

import pytest

import recipesearch.functional as functional
from recipesearch.algorithms import get_algorithm, list_algorithms

PUBLIC = list(functional.__all__)

# Built-in method -> its public functions here. A new method module fails the last test until it is listed.
METHOD_FUNCTIONS: dict[str, list[str]] = {
    "bce_loss": ["bce_loss", "init_classifier_bias"],
    "blurpool": ["apply_blurpool"],
    "channels_last": ["apply_channels_last"],
    "colout": ["colout_batch"],
    "cutmix": ["cutmix_batch"],
    "cutout": ["cutout_batch"],
    "ema": ["ema_update", "ema_smoothing"],
    "flip_tta": ["flip_tta_logits"],
    "ghost_batchnorm": ["apply_ghost_batchnorm"],
    "gradient_clipping": ["clip_gradients"],
    "label_smoothing": ["smooth_labels"],
    "layer_freezing": ["freeze_layers", "freeze_fraction"],
    "lookahead": ["lookahead_sync"],
    "mixed_precision": ["autocast_dtype"],
    "mixup": ["mixup_batch"],
    "patch_whitening": ["apply_patch_whitening", "whitening_filters"],
    "progressive_resizing": ["progressive_resize", "resize_batch"],
    "randaugment": ["randaugment_batch"],
    "sam": ["sam_perturb", "sam_restore"],
    "selective_backprop": ["select_using_loss"],
    "squeeze_excite": ["apply_squeeze_excite"],
    "stochastic_depth": ["apply_stochastic_depth"],
    "swa": ["recompute_bn"],
    "torch_compile": ["apply_torch_compile"],
    "trivialaugment": ["trivialaugment_batch"],
}


def _docstring(name: str) -> str:
    return inspect.getdoc(getattr(functional, name)) or ""


def test_all_lists_exactly_the_public_functions() -> None:
    defined = {n for n, obj in vars(functional).items()
               if inspect.isfunction(obj) and obj.__module__ == functional.__name__ and not n.startswith("_")}
    assert sorted(PUBLIC) == sorted(defined)


@pytest.mark.parametrize("name", PUBLIC)
def test_public_function_has_args_and_a_doctest_example(name: str) -> None:
    doc = _docstring(name)
    assert "\nArgs:\n" in doc, f"{name}: no Args: section"
    params = [p for p in inspect.signature(getattr(functional, name)).parameters]
    args_section = doc.split("\nArgs:\n", 1)[1].split("\nExample:\n", 1)[0]
    missing = [p for p in params if f"{p}:" not in args_section]
    assert missing == [], f"{name}: Args: does not describe {missing}"
    assert "\nExample:\n" in doc, f"{name}: no Example: section"
    assert ">>> " in doc.split("\nExample:\n", 1)[1], f"{name}: its Example: has no doctest (>>>) line"


def run_examples(obj: object, name: str) -> tuple[int, int, str]:
    """(examples run, failures, doctest's report) of ``obj``'s docstring, in the module's namespace."""
    tests = doctest.DocTestFinder().find(obj, name, globs=dict(vars(functional)))
    output: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test, out=output.append)
    return runner.tries, runner.failures, "".join(output)


@pytest.mark.parametrize("name", PUBLIC)
def test_docstring_example_runs(name: str) -> None:
    tries, failures, report = run_examples(getattr(functional, name), name)
    assert tries > 0
    assert failures == 0, report


def test_a_wrong_example_fails() -> None:
    def wrong() -> None:
        """Example:
            >>> smooth_labels(torch.tensor([0]), 2, 0.0)
            tensor([[0., 1.]])
        """

    tries, failures, report = run_examples(wrong, "wrong")
    assert (tries, failures) == (1, 1) and "tensor([[1., 0.]])" in report


def test_every_builtin_method_has_a_public_function() -> None:
    builtin = sorted(n for n in list_algorithms() if get_algorithm(n).__module__.startswith("recipesearch.algorithms."))
    assert sorted(METHOD_FUNCTIONS) == builtin
    listed = [f for functions in METHOD_FUNCTIONS.values() for f in functions]
    assert sorted(listed) == sorted(PUBLIC)
