"""Label smoothing: the smoothed targets and their loss against a hand computation; the hook changes the
loss the trainer backpropagates."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from recipesearch.algorithms import Algorithm, get_algorithm
from recipesearch.algorithms.label_smoothing import as_distribution, smooth_labels
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State
from recipesearch.train.loop import Trainer, soft_cross_entropy

K = 5


def hand_smoothed_loss(logits: torch.Tensor, labels: torch.Tensor, eps: float) -> torch.Tensor:
    """(1 - eps) * CE(logits, labels) + eps * mean over classes of -log p: the textbook decomposition."""
    log_p = torch.log_softmax(logits.double(), dim=1)
    ce = -log_p.gather(1, labels[:, None]).squeeze(1)
    uniform = -log_p.mean(dim=1)
    return ((1 - eps) * ce + eps * uniform).mean()


def test_smoothed_targets_by_hand() -> None:
    labels = torch.tensor([0, 3, 4])
    targets = smooth_labels(labels, K, 0.1)
    expected = torch.full((3, K), 0.1 / K)
    expected[torch.arange(3), labels] = 0.9 + 0.1 / K
    torch.testing.assert_close(targets, expected)
    torch.testing.assert_close(targets.sum(1), torch.ones(3))
    assert torch.equal(targets.argmax(1), labels)  # the true class keeps the largest share


def test_zero_smoothing_is_one_hot_and_distributions_are_smoothed_too() -> None:
    labels = torch.tensor([1, 2])
    assert torch.equal(smooth_labels(labels, K, 0.0), F.one_hot(labels, K).float())
    mixed = torch.tensor([[0.7, 0.3, 0.0, 0.0, 0.0]])  # e.g. a MixUp target, smoothed after mixing
    assert as_distribution(mixed, K) is mixed
    torch.testing.assert_close(smooth_labels(mixed, K, 0.5), torch.tensor([[0.45, 0.25, 0.1, 0.1, 0.1]]))


@pytest.mark.parametrize("eps", [0.05, 0.1, 0.3])
def test_loss_equals_the_formula(eps: float) -> None:
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(8, K, generator=g) * 3
    labels = torch.randint(0, K, (8,), generator=g)
    loss = soft_cross_entropy(logits, smooth_labels(labels, K, eps))
    torch.testing.assert_close(loss.double(), hand_smoothed_loss(logits, labels, eps))


def test_confident_correct_prediction_costs_more_than_unsmoothed() -> None:
    logits = torch.tensor([[12.0, 0.0, 0.0, 0.0, 0.0]])
    labels = torch.tensor([0])
    hard = soft_cross_entropy(logits, labels)
    smoothed = soft_cross_entropy(logits, smooth_labels(labels, K, 0.1))
    assert hard < 1e-4 and smoothed > 100 * hard  # smoothing penalises over-confidence
    # ... and the smoothed loss is minimal at a finite margin, not at an infinitely confident one.
    wider = soft_cross_entropy(logits * 2, smooth_labels(labels, K, 0.1))
    assert wider > smoothed


def test_hook_replaces_index_targets_with_distributions() -> None:
    state = State(recipe=None, model=None, data=None, device=torch.device("cpu"), num_classes=K,
                  loss_fn=soft_cross_entropy, y=torch.tensor([4, 0]))
    get_algorithm("label_smoothing")(smoothing=0.2).apply(Event.AFTER_DATALOADER, state)
    torch.testing.assert_close(state.y, smooth_labels(torch.tensor([4, 0]), K, 0.2))


def test_smoothing_of_one_is_refused() -> None:
    with pytest.raises(ConfigError, match="algorithms.label_smoothing.smoothing"):
        get_algorithm("label_smoothing")(smoothing=1.0)  # all mass on the uniform: nothing left to learn


class _Probe(Algorithm):
    """Records the hard labels before smoothing, and the outputs and loss the trainer backpropagates."""

    name = "probe"
    description = "records the batch"
    citation = "-"
    events = frozenset({Event.AFTER_DATALOADER, Event.AFTER_LOSS})

    def __init__(self) -> None:
        super().__init__()
        self.labels: list[torch.Tensor] = []
        self.batches: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []

    def apply(self, event: Event, state: State) -> None:
        if event == Event.AFTER_DATALOADER:
            self.labels.append(state.y.clone())
        else:
            self.batches.append((state.outputs.detach().clone(), state.y.clone(), state.loss.detach().clone()))


def test_in_a_run_the_trainer_backpropagates_the_smoothed_loss(tiny_recipe) -> None:
    eps = 0.2
    trainer = Trainer(tiny_recipe({"label_smoothing": {"smoothing": eps}}, max_duration=1))
    probe = _Probe()
    trainer._by_event[Event.AFTER_DATALOADER].insert(0, probe)  # before the smoothing hook
    trainer._by_event[Event.AFTER_LOSS].append(probe)
    trainer.train()
    assert len(probe.batches) == len(probe.labels) == trainer.state.total_steps > 0
    for labels, (outputs, targets, loss) in zip(probe.labels, probe.batches):
        assert targets.shape == (len(labels), trainer.state.num_classes)  # distributions reached the loss
        torch.testing.assert_close(loss, hand_smoothed_loss(outputs, labels, eps).float())
    # Early on the predictions are near uniform and both losses are ~log K; once the model is confident,
    # smoothing keeps a floor under the loss that plain cross-entropy does not have.
    outputs, _, loss = probe.batches[-1]
    assert loss.item() > F.cross_entropy(outputs, probe.labels[-1]).item() + 0.05
