"""The batch loss equals the reference's, written here from its equations (``hua-zi/FedCFA``, ``alg/fedcfa.py``).

The reference's client step, for a batch ``(x, y)`` with factors
``z = encoder(x)`` and ``B`` samples:

- ``L_ce = CE(decoder(z), y)``;
- each factor's score is the gradient, at the detached ``z``, of
  ``sum_i decoder_g(z)[i, y_i] / B`` under the round's received (frozen) model;
- the positive mask keeps every factor but the ``k`` smallest scores, the
  negative mask every factor but the ``k`` largest (masks of ones with zeros
  at the picked factors);
- one global mean is drawn per sample; its factors ``z_g`` are detached;
- ``z_p = m_p z + (1 - m_p) z_g`` with the one-hot label, ``z_n = m_n z +
  (1 - m_n) z_g`` with the soft label ``mean(m_n) y + mean(1 - m_n) y_g``,
  both from the detached ``z``;
- ``L = w_ce L_ce + w_p CE(decoder(z_p), y) + w_n softCE(decoder(z_n), y_n)``
  (the reference parses an FDC weight but never adds the term).

The function below computes this with multiplicative masks, independently of
:mod:`fedmosaic.methods.horizontal.fedcfa`, on a flat MLP.
"""

import pytest
import torch
from torch import Tensor, nn
from torch.nn import functional as F

from fedmosaic.methods.arrays import seeded
from fedmosaic.methods.horizontal.fedcfa.objective import CounterfactualObjective, frozen_copy
from fedmosaic.methods.horizontal.fedcfa.params import FedCFAParams
from fedmosaic.methods.horizontal.fedcfa.split import split_model
from fedmosaic.methods.horizontal.models import ModelParams, build_model

SPLIT = 3  # Flatten, Linear, ReLU | Linear, ReLU, Linear: 64 factors
FACTORS, K, CLASSES = 64, 24, 3
WEIGHTS = (1.0, 5.0, 5.0)


def reference_batch_loss(
    encoder: nn.Module,
    decoder: nn.Module,
    frozen_decoder: nn.Module,
    x: Tensor,
    y: Tensor,
    means_x: Tensor,
    means_y: Tensor,
    drawn: Tensor,
) -> Tensor:
    """The reference's loss of one batch, from the equations in the module docstring."""
    latent = encoder(x)
    loss_ce = F.cross_entropy(decoder(latent), y)
    one_hot = F.one_hot(y, CLASSES).float()

    probe = latent.detach().clone().requires_grad_(True)
    true_logits = (frozen_decoder(probe) * one_hot).sum() / len(x)
    (scores,) = torch.autograd.grad(true_logits, probe)
    keep_positive = torch.ones_like(scores).scatter(1, scores.topk(K, dim=1, largest=False).indices, 0.0)
    keep_negative = torch.ones_like(scores).scatter(1, scores.topk(K, dim=1, largest=True).indices, 0.0)

    donor = encoder(means_x[drawn]).detach()
    kept = latent.detach()
    positive = keep_positive * kept + (1 - keep_positive) * donor
    negative = keep_negative * kept + (1 - keep_negative) * donor
    negative_label = keep_negative.mean() * one_hot + (1 - keep_negative).mean() * means_y[drawn]
    loss_positive = -(one_hot * F.log_softmax(decoder(positive), dim=1)).sum(dim=1).mean()
    loss_negative = -(negative_label * F.log_softmax(decoder(negative), dim=1)).sum(dim=1).mean()
    w_ce, w_positive, w_negative = WEIGHTS
    return w_ce * loss_ce + w_positive * loss_positive + w_negative * loss_negative


def _gradients(model: nn.Module) -> list[Tensor]:
    return [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in model.parameters()]


@pytest.mark.parametrize(("batch", "means"), [(16, 5), (8, 40)])
def test_the_batch_loss_and_its_gradients_match_the_references_equations(batch: int, means: int) -> None:
    # Prepare: one model, two copies; the same global means and the same draws
    model = seeded(0, lambda: build_model(ModelParams(hidden=[FACTORS, 32]), (10,), CLASSES))
    twin = seeded(0, lambda: build_model(ModelParams(hidden=[FACTORS, 32]), (10,), CLASSES))
    generator = torch.Generator().manual_seed(3)
    x, y = torch.randn(batch, 10, generator=generator), torch.randint(0, CLASSES, (batch,), generator=generator)
    means_x = torch.randn(means, 10, generator=generator)
    means_y = torch.softmax(torch.randn(means, CLASSES, generator=generator), dim=1)
    _, decoder = split_model(model, SPLIT)
    w_ce, w_positive, w_negative = WEIGHTS
    params = FedCFAParams(k=K, fdc_weight=0.0, ce_weight=w_ce, positive_weight=w_positive, negative_weight=w_negative)
    objective = CounterfactualObjective(
        SPLIT, frozen_copy(decoder), means_x, means_y, params, torch.Generator().manual_seed(11)
    )
    drawn = torch.randint(means, (batch,), generator=torch.Generator().manual_seed(11))
    twin_encoder, twin_decoder = split_model(twin, SPLIT)

    # Execute
    ours = objective(model, x, y)
    ours.backward()
    theirs = reference_batch_loss(twin_encoder, twin_decoder, frozen_copy(twin_decoder), x, y, means_x, means_y, drawn)
    theirs.backward()

    # Assert: equal up to float32 rounding of the loss (summed in another order; the loss is several units)
    torch.testing.assert_close(ours.detach(), theirs.detach(), rtol=1e-6, atol=1e-6)
    for a, b in zip(_gradients(model), _gradients(twin), strict=True):
        torch.testing.assert_close(a, b, rtol=0.0, atol=1e-6)
    assert any(bool(g.abs().sum() > 0) for g in _gradients(model))
