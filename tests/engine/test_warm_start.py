"""engine/warm_start.py: an earlier search's front recipes proposed first in a new one, mapped onto its space; the
earlier search's ranking against the new one's in the report; bad warm-start folders refused in one line."""
from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

import recipesearch
from recipesearch.engine.warm_start import map_params, proxy_ranking, warm_start
from recipesearch.runlock import run_dir_lock
from recipesearch.space import load_space
from tests.conftest import call_cli
from tests.engine.conftest import REPO, TINY_BASE

ALGOS = {"label_smoothing": {"smoothing": {"range": [0.05, 0.2]}}, "mixup": {"alpha": {"range": [0.1, 0.4]}}}


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    """A finished search on a proxy: half of the digits images, LR 0.5x-2x, label smoothing and mixup."""
    from tests.engine.conftest import tiny_space

    root = tmp_path_factory.mktemp("proxy")
    space = root / "proxy.yaml"
    import yaml

    space.write_text(yaml.safe_dump(tiny_space(base={**TINY_BASE, "data": {"name": "digits", "subset": 0.5}},
                                               algorithms=ALGOS, trials=7)))
    recipesearch.search(space, out=root / "run", executor="inprocess", quiet=True, report=False)
    # Which proposals reach the proxy's front must not follow from which run was faster here: the proposals with
    # label smoothing on (what the full search below keeps of them) are made 1000x faster than they ran, so the
    # fastest of them is on the front, ahead of every baseline run, by construction (warm starts read trials.csv).
    trials = pd.read_csv(root / "run" / "trials.csv")
    fast = (trials["stage"] == "search") & (trials["params_alg.label_smoothing"] == True)  # noqa: E712 (a column)
    assert fast.any(), "the proxy's seeded proposals have no label smoothing to keep"
    trials.loc[fast, "train_seconds"] *= 1e-3
    trials.to_csv(root / "run" / "trials.csv", index=False)
    return root / "run"


def test_the_front_of_the_earlier_search_is_proposed_first(tmp_path, write_space, proxy, capsys):
    # the full search: all the images, no mixup (its parameters are dropped, with a note), LR 0.75x-1.5x (an
    # earlier LR outside it is dropped too: the base LR instead)
    path = write_space(algorithms={"label_smoothing": ALGOS["label_smoothing"]},
                       hparams={"optimizer.lr": {"scale": [0.75, 1.5]}}, trials=6)
    out = tmp_path / "run"
    code, stdout, err = call_cli(capsys, "search", str(path), "--out", str(out), "--executor", "inprocess",
                                 "--quiet", "--no-report", "--warm-start", str(proxy))
    assert code == 0, err
    meta = json.loads((out / "run.json").read_text())
    warm = meta["warm_start"]
    assert warm["runs"] == [str(proxy)] and warm["recipes"]
    space = load_space(path)
    assert all(set(r["params"]) == set(space.complete(r["params"])) for r in warm["recipes"])
    df = pd.read_csv(out / "trials.csv")
    searched = df[df["stage"] == "search"]
    # queued right after the baseline, in the warm start's order (at most half of the 4 proposals)
    first = searched.head(min(2, len(warm["recipes"])))
    assert len(first) >= 1
    for (_, row), recipe in zip(first.iterrows(), warm["recipes"], strict=False):
        assert row["params_alg.label_smoothing"] == recipe["params"]["alg.label_smoothing"]
        assert row["params_optimizer.lr"] == pytest.approx(recipe["params"]["optimizer.lr"])
    assert "were dropped: alg.mixup" in stdout  # every proxy row has mixup's switch: this space has no mixup


def test_mapping_keeps_what_fits_and_names_what_does_not(write_space):
    space = load_space(write_space(algorithms={"label_smoothing": ALGOS["label_smoothing"]},
                                   hparams={"optimizer.lr": {"scale": [0.75, 1.5]}}))
    row = pd.Series({"params_budget": 0.5, "params_optimizer.lr": 2.0, "params_alg.label_smoothing": True,
                     "params_label_smoothing.smoothing": 0.1, "params_alg.mixup": True, "params_mixup.alpha": 0.3})
    params, dropped = map_params(row, space)
    assert dropped == ["alg.mixup", "mixup.alpha", "optimizer.lr"]  # no mixup here; 2x is outside 0.75x-1.5x
    assert params == {"budget": 0.5, "optimizer.lr": 1.0, "alg.label_smoothing": True,
                      "label_smoothing.smoothing": 0.1}
    # a budget this space does not have: the nearest it has
    assert map_params(pd.Series({"params_budget": 2.0}), space)[0]["budget"] == 1.0


def test_the_headline_is_followed_by_its_switches():
    """On a committed search (nothing trained): its confirmed curves, then its headline with each optional method
    of the shipped fashion_mnist_long space switched, never trained there (no numbers to rank a proxy by)."""
    run = REPO / "reports" / "examples" / "fashion_mnist_long_epyc"
    warm = warm_start([run], load_space(REPO / "recipesearch" / "shipped" / "spaces" / "fashion_mnist_long.yaml"))
    sources = [r.source.removeprefix(f"{run} ") for r in warm.recipes]
    confirmed = [r.confirmed for r in warm.recipes]
    assert sources[:2] == ["trial 10", "trial 9"] and confirmed[:2] == [True, True]
    assert sources[2:] == ["trial 10 without progressive_resizing", "trial 10 without layer_freezing",
                           "trial 10 without bce_loss", "trial 10 with ema", "trial 10 with cutout",
                           "trial 10 without proxy_selection", "trial 10 with pool_before_norm"]
    headline = warm.recipes[0].params
    for r in warm.recipes[2:]:
        differ = {k for k in set(r.params) | set(headline) if r.params.get(k) != headline.get(k)}
        assert any(k.startswith("alg.") for k in differ) and not r.confirmed and r.metric is None
        switched = {"progressive_resizing", "layer_freezing", "ema", "cutout", "proxy_selection", "pool_before_norm"}
        assert all(k.startswith("alg.") or k.split(".")[0] in switched for k in differ)
    assert all(w["metric"] is None for w in warm.to_dict()[2:])  # run.json: JSON null, not NaN
    assert proxy_ranking(warm.to_dict(), pd.DataFrame({"params_budget": [], "state": []}), "val_accuracy") is None


def test_a_folder_that_is_not_a_run_or_is_running_or_of_another_model_is_one_line(tmp_path, write_space, proxy,
                                                                                   capsys):
    path = write_space()
    before = (proxy / "trials.csv").read_bytes()
    lock = run_dir_lock(proxy).acquire(publish=False)
    try:
        code, _, err = call_cli(capsys, "search", str(path), "--out", str(tmp_path / "a"), "--executor", "inprocess",
                                "--quiet", "--warm-start", str(proxy))
    finally:
        lock.release()
    assert code == 2 and err.strip() == f"error: --warm-start: a search is running in {proxy}; warm-start from it " \
                                        "once it finished"
    (tmp_path / "empty").mkdir()
    code, _, err = call_cli(capsys, "search", str(path), "--out", str(tmp_path / "b"), "--executor", "inprocess",
                            "--quiet", "--warm-start", str(tmp_path / "empty"))
    assert code == 2 and err.strip() == f"error: --warm-start: {tmp_path / 'empty'} is not a search's run " \
                                        "directory (no trials.csv)"
    damaged = tmp_path / "damaged"
    shutil.copytree(proxy, damaged)
    (damaged / "trials.csv").write_text("number,state\n0,COMPLETE,1,2\n")
    code, _, err = call_cli(capsys, "search", str(path), "--out", str(tmp_path / "d"), "--executor", "inprocess",
                            "--quiet", "--warm-start", str(damaged))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "trials.csv" in err
    other = write_space("other.yaml", base={**TINY_BASE, "model": {"name": "resnet8", "width": 0.25}})
    code, _, err = call_cli(capsys, "search", str(other), "--out", str(tmp_path / "c"), "--executor", "inprocess",
                            "--quiet", "--warm-start", str(proxy))
    assert code == 2 and "searched cnn on digits, this search resnet8 on digits" in err
    assert not any((tmp_path / d).exists() for d in "abcd") and (proxy / "trials.csv").read_bytes() == before


def test_proxy_ranking_is_spearman_over_the_recipes_both_trained():
    warm = [{"params": {"budget": 1.0, "alg.x": i % 2 == 0, "lr": float(i)}, "metric": 0.5 + 0.1 * i,
             "train_seconds": 10.0 - i} for i in range(4)]
    rows = [{"state": "COMPLETE", "params_budget": 1.0, "params_alg.x": i % 2 == 0, "params_lr": float(i),
             "val_accuracy": 0.6 + 0.05 * (3 - i if i < 2 else i), "train_seconds": 5.0 - i} for i in range(4)]
    rank = proxy_ranking(warm, pd.DataFrame(rows), "val_accuracy")
    assert rank["recipes"] == 4 and rank["rho_seconds"] == pytest.approx(1.0)
    assert rank["rho_accuracy"] == pytest.approx(pd.Series([0, 1, 2, 3]).corr(pd.Series([3, 2, 2, 3]),
                                                                                method="spearman"))
    assert proxy_ranking(warm[:2], pd.DataFrame(rows), "val_accuracy") is None
