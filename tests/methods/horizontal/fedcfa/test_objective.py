"""The batch loss: weighted terms, decoder-only counterfactual gradients, frozen scorer."""

from typing import Any

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from fedmosaic.methods.arrays import seeded
from fedmosaic.methods.horizontal.fedcfa.decorrelation import factor_decorrelation
from fedmosaic.methods.horizontal.fedcfa.objective import CounterfactualObjective, frozen_copy
from fedmosaic.methods.horizontal.fedcfa.params import FedCFAParams
from fedmosaic.methods.horizontal.fedcfa.split import split_model
from fedmosaic.methods.horizontal.models import ModelParams, build_model

SPLIT = 3  # after the first hidden layer's ReLU: 8 factors


def _model() -> nn.Sequential:
    return seeded(0, lambda: build_model(ModelParams(hidden=[8, 6]), (2,), 3))


def _objective(
    model: nn.Module, average_x: torch.Tensor, average_y: torch.Tensor, **params: Any
) -> CounterfactualObjective:
    _, decoder = split_model(model, SPLIT)
    return CounterfactualObjective(
        split=SPLIT,
        reference_decoder=frozen_copy(decoder),
        average_x=average_x,
        average_y=average_y,
        params=FedCFAParams(k=2, **params),
        generator=torch.Generator().manual_seed(0),
    )


def _batch(n: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    return torch.randn(n, 2, generator=generator), torch.randint(0, 3, (n,), generator=generator)


NO_TERMS = {"ce_weight": 0.0, "fdc_weight": 0.0, "positive_weight": 0.0, "negative_weight": 0.0}


def test_counterfactual_losses_give_no_gradient_to_the_encoder() -> None:
    # Prepare
    model = _model()
    x, y = _batch()
    average_x, average_y = torch.randn(5, 2), torch.softmax(torch.randn(5, 3), dim=1)
    counterfactual_only = {**NO_TERMS, "positive_weight": 5.0, "negative_weight": 5.0}
    objective = _objective(model, average_x, average_y, **counterfactual_only)
    encoder, decoder = split_model(model, SPLIT)
    # Execute
    objective(model, x, y).backward()
    # Assert: the real-sample terms are weighted 0, so any encoder gradient would be counterfactual
    assert all(p.grad is None or not p.grad.any() for p in encoder.parameters())
    assert all(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in decoder.parameters())


def test_the_real_samples_and_fdc_train_the_encoder() -> None:
    # Prepare
    model = _model()
    x, y = _batch()
    objective = _objective(model, torch.randn(5, 2), torch.full((5, 3), 1 / 3))
    encoder, _ = split_model(model, SPLIT)
    # Execute
    objective(model, x, y).backward()
    # Assert
    assert all(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in encoder.parameters())


def test_ce_and_fdc_terms_are_the_weighted_cross_entropy_and_decorrelation() -> None:
    # Prepare
    model = _model()
    x, y = _batch()
    average_x, average_y = torch.randn(5, 2), torch.full((5, 3), 1 / 3)
    ce_only = _objective(model, average_x, average_y, **{**NO_TERMS, "ce_weight": 2.0})
    fdc_only = _objective(model, average_x, average_y, **{**NO_TERMS, "fdc_weight": 0.5})
    encoder, _ = split_model(model, SPLIT)
    # Execute
    ce, fdc = ce_only(model, x, y), fdc_only(model, x, y)
    # Assert
    torch.testing.assert_close(ce, 2.0 * F.cross_entropy(model(x), y))
    torch.testing.assert_close(fdc, 0.5 * factor_decorrelation(encoder(x)))


def test_with_the_sample_as_its_own_donor_the_counterfactual_terms_reduce_to_known_losses() -> None:
    # Prepare: every sample equals the one global mean, so replacing factors changes nothing
    model = _model()
    mean = torch.tensor([[0.3, -0.7]])
    x, y = mean.repeat(4, 1), torch.tensor([0, 1, 2, 0])
    average_y = torch.tensor([[0.2, 0.3, 0.5]])
    positive = _objective(model, mean, average_y, **{**NO_TERMS, "positive_weight": 5.0})
    negative = _objective(model, mean, average_y, **{**NO_TERMS, "negative_weight": 3.0})
    share = 2 / 8  # k / factors
    target = (1 - share) * F.one_hot(y, 3).float() + share * average_y
    # Execute
    positive_loss, negative_loss = positive(model, x, y), negative(model, x, y)
    # Assert
    with torch.no_grad():
        logits = model(x)
    torch.testing.assert_close(positive_loss, 5.0 * F.cross_entropy(logits, y))
    soft_cross_entropy = -(target * F.log_softmax(logits, dim=1)).sum(dim=1).mean()
    torch.testing.assert_close(negative_loss, 3.0 * soft_cross_entropy)


def test_the_scorer_is_a_frozen_copy_untouched_by_training() -> None:
    # Prepare
    model = _model()
    _, decoder = split_model(model, SPLIT)
    frozen = frozen_copy(decoder)
    before = [p.clone() for p in frozen.parameters()]
    x, y = _batch()
    average_x, average_y = torch.randn(5, 2), torch.full((5, 3), 1 / 3)
    generator = torch.Generator().manual_seed(0)
    objective = CounterfactualObjective(SPLIT, frozen, average_x, average_y, FedCFAParams(k=2), generator)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    # Execute
    objective(model, x, y).backward()
    optimizer.step()
    # Assert
    assert all(not p.requires_grad and p.grad is None for p in frozen.parameters())
    assert all(torch.equal(a, b) for a, b in zip(frozen.parameters(), before, strict=True))
    assert any(not torch.equal(a, b) for a, b in zip(decoder.parameters(), before, strict=True))
    assert not frozen.training


@pytest.mark.parametrize("seed", [0, 1])
def test_donor_draws_come_from_the_objectives_generator(seed: int) -> None:
    # Prepare: two objectives with equal generators give equal losses
    model = _model()
    x, y = _batch()
    average_x, average_y = torch.randn(9, 2), torch.softmax(torch.randn(9, 3), dim=1)
    a = _objective(model, average_x, average_y)
    b = _objective(model, average_x, average_y)
    a.generator.manual_seed(seed)
    b.generator.manual_seed(seed)
    # Execute / Assert
    torch.manual_seed(123)
    first = a(model, x, y)
    torch.manual_seed(456)
    assert torch.equal(first, b(model, x, y))


def test_each_counterfactual_term_depends_on_its_own_rule_only() -> None:
    # Prepare: the positive term alone, under two negative rules and under another positive rule
    model = _model()
    x, y = _batch()
    average_x, average_y = torch.randn(5, 2), torch.softmax(torch.randn(5, 3), dim=1)
    positive_only = {**NO_TERMS, "positive_weight": 1.0}
    # Execute
    losses = [
        _objective(model, average_x, average_y, **positive_only, **rules)(model, x, y)
        for rules in (
            {"negative_rule": "signed-largest"},
            {"negative_rule": "magnitude-smallest"},
            {"positive_rule": "magnitude-smallest"},
        )
    ]
    # Assert
    assert torch.equal(losses[0], losses[1])
    assert not torch.equal(losses[0], losses[2])
