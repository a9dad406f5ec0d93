"""The one local training loop and classifier evaluation."""

import pytest
import torch
from pydantic import ValidationError

from fedmosaic.methods.train_params import TrainParams
from fedmosaic.methods.training import dp_sgd_epsilon, evaluate_classifier, make_optimizer, train_epochs


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
    train_epochs(
        model,
        x,
        y,
        params=TrainParams(epochs=3, batch_size=10, lr=0.5),
        generator=torch.Generator().manual_seed(1),
        loss_fn=counting_loss,
    )
    # Assert
    assert sum(seen) == 3 * 64
    assert max(seen) == 10
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


# ----------------------------------------------------------------------------- local DP-SGD


def _one_step(noise: float, bound: float, seed: int = 0) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    before = torch.cat([p.detach().flatten().clone() for p in model.parameters()])
    x, y = 10 * torch.randn(16, 4), torch.randint(0, 3, (16,))
    params = TrainParams(batch_size=16, lr=1.0, dp_noise_multiplier=noise, dp_max_grad_norm=bound)
    train_epochs(model, x, y, params=params, generator=torch.Generator().manual_seed(seed))
    after = torch.cat([p.detach().flatten() for p in model.parameters()])
    return model, after - before


def test_dp_sgd_without_noise_moves_the_model_by_at_most_the_clipping_bound_per_step() -> None:
    # Per-example gradients clipped to 0.01 and averaged: one step of lr 1 moves at most 0.01.
    model, step = _one_step(noise=1e-9, bound=0.01)
    assert 0 < float(step.norm()) <= 0.01 + 1e-6
    assert not any(hasattr(p, "grad_sample") for p in model.parameters()), "Opacus's hooks are removed"
    _, plain = _one_step(noise=0.0, bound=0.01)
    assert float(plain.norm()) > 0.01, "without DP-SGD the same step is larger"


def test_dp_sgd_noise_is_drawn_from_the_given_generator() -> None:
    _, first = _one_step(noise=1.0, bound=1.0, seed=3)
    _, again = _one_step(noise=1.0, bound=1.0, seed=3)
    _, other = _one_step(noise=1.0, bound=1.0, seed=4)
    assert torch.equal(first, again)
    assert not torch.equal(first, other)


def test_dp_sgd_epsilon_is_opacus_accountants_for_its_batches() -> None:
    from opacus.accountants import RDPAccountant

    params = TrainParams(batch_size=10, epochs=2, dp_noise_multiplier=1.1, dp_delta=1e-5)
    accountant = RDPAccountant()
    for _ in range(3 * 2 * 5):  # 3 rounds x 2 epochs x ceil(45 / 10) batches
        accountant.step(noise_multiplier=1.1, sample_rate=10 / 45)
    assert dp_sgd_epsilon(params, 45, 3) == pytest.approx(accountant.get_epsilon(1e-5))
    assert dp_sgd_epsilon(params, 45, 0) == 0.0
