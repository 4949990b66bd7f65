from __future__ import annotations

import pytest
from torch import nn

from recipesearch.errors import ConfigError
from recipesearch.models import ResidualBlock, create_model
from recipesearch.models.blocks import last_batchnorm
from recipesearch.models.cifar_resnet import cifar_resnet


def _params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(("name", "paper"), [("resnet20", 0.27e6), ("resnet56", 0.85e6), ("resnet110", 1.7e6)])
def test_parameter_count_matches_the_paper(name: str, paper: float) -> None:
    # He et al. 2016, Table 6 (CIFAR-10). Our projection shortcuts add 2.8k parameters.
    assert _params(create_model(name, 10)) == pytest.approx(paper, rel=0.02)


@pytest.mark.parametrize(("name", "n"), [("resnet8", 1), ("resnet20", 3), ("resnet56", 9)])
def test_depth_is_6n_plus_2(name: str, n: int) -> None:
    model = create_model(name, 10)
    blocks = [m for m in model.modules() if isinstance(m, ResidualBlock)]
    assert len(blocks) == 3 * n
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d) and m.kernel_size == (3, 3)]
    assert len(convs) + 1 == 6 * n + 2  # 3x3 convs + fc; 1x1 projections are not counted as layers


def test_widths_and_width_multiplier() -> None:
    model = create_model("resnet20", 10, width=0.5)
    assert [s[0].branch[0].out_channels for s in model.stages] == [8, 16, 32]


def test_zero_init_residual() -> None:
    for flag in (True, False):
        model = create_model("resnet20", 10, zero_init_residual=flag)
        gammas = [last_batchnorm(b.branch).weight for b in model.modules() if isinstance(b, ResidualBlock)]
        assert all(bool((g == 0).all()) == flag for g in gammas)


def test_depth_must_be_6n_plus_2() -> None:
    with pytest.raises(ConfigError, match="6n\\+2"):
        cifar_resnet(21, 10)
