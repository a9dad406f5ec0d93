"""The one local training loop and classifier evaluation."""

import pytest
import torch
from pydantic import ValidationError

from fedmosaic.methods.training import TrainParams, evaluate_classifier, make_optimizer, train_epochs


def _data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 2, generator=g)
    return x, (x[:, 0] > 0).long()


def test_training_lowers_the_loss_and_visits_every_example_each_epoch() -> None:
    # Prepare
    x, y = _data()
    model = torch.nn.Linear(2, 2)
    seen: list[int] = []

    def counting_loss(m, xb, yb):
        seen.append(len(xb))
        return torch.nn.functional.cross_entropy(m(xb), yb)

    before = evaluate_classifier(model, x, y)["loss"]
    # Execute
    train_epochs(model, x, y, params=TrainParams(epochs=3, batch_size=10, lr=0.5),
                 generator=torch.Generator().manual_seed(1), loss_fn=counting_loss)
    # Assert
    assert sum(seen) == 3 * 64 and max(seen) == 10
    assert evaluate_classifier(model, x, y)["loss"] < before


def test_evaluation_reports_accuracy_and_mean_cross_entropy() -> None:
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    y = torch.tensor([0, 1, 1])
    model = torch.nn.Identity()
    metrics = evaluate_classifier(model, x, y, batch_size=2)
    expected = torch.nn.functional.cross_entropy(x, y).item()
    assert metrics["accuracy"] == pytest.approx(2 / 3)
    assert metrics["loss"] == pytest.approx(expected, rel=1e-6)


def test_optimizer_choice_and_validation() -> None:
    model = torch.nn.Linear(2, 2)
    assert isinstance(make_optimizer(model, TrainParams(optimizer="adam")), torch.optim.Adam)
    assert isinstance(make_optimizer(model, TrainParams()), torch.optim.SGD)
    with pytest.raises(ValidationError):
        TrainParams(lr=0.0)
    with pytest.raises(ValidationError):
        TrainParams(momentum=1.0)
