"""Specification of the importance-weighted bound and of SNIS, on FALSE-VFL's own model."""

from itertools import pairwise

import numpy as np
import torch

from fedmosaic.methods.arrays import seeded
from fedmosaic.methods.vertical.false_vfl.active import ActiveModel
from fedmosaic.methods.vertical.false_vfl.bounds import iwae_bound, snis_weights
from fedmosaic.methods.vertical.false_vfl.params import FalseVFLParams
from fedmosaic.methods.vertical.false_vfl.prediction import predictive_probabilities
from fedmosaic.methods.vertical.networks import gaussian_log_prob

TINY = FalseVFLParams(latent=1, top_latent=1, hidden=4)


def tiny_model() -> ActiveModel:
    return seeded(3, lambda: ActiveModel((2,), 2, TINY, "gaussian"))


def bound_samples(model: ActiveModel, x: torch.Tensor, kappa: int, repeats: int, seed: int) -> torch.Tensor:
    """``repeats`` independent kappa-sample bounds of log p(x) for one row."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        q_mean, q_logvar = model.party.encoder(x)
        q_mean, q_logvar = q_mean.expand(repeats, 1), q_logvar.expand(repeats, 1)
        h = q_mean + torch.exp(0.5 * q_logvar) * torch.randn((kappa, repeats, 1), generator=generator)
        loglik = model.party.log_likelihood(x.expand(repeats, 2), torch.ones(repeats, dtype=torch.bool), h)
        return iwae_bound(model.log_weights(h, q_mean, q_logvar, loglik, model.top_noise(h, generator)))


def brute_force_log_evidence(model: ActiveModel, x: torch.Tensor) -> float:
    """Log of the double integral of p(z) p(h | z) p(x | h) on a fine grid."""
    grid = torch.linspace(-12, 12, 2401, dtype=torch.float64)
    step = float(grid[1] - grid[0])
    with torch.no_grad():
        model = model.double()
        h_mean, h_logvar = model.top_decoder(grid[:, None])
        log_prior = gaussian_log_prob(grid[:, None], torch.zeros(()), torch.zeros(()))
        log_h_given_z = gaussian_log_prob(grid[None, :, None], h_mean[:, None], h_logvar[:, None])
        log_x_given_h = model.party.decoder.log_prob(x.double(), grid[:, None])
        joint = log_prior[:, None] + log_h_given_z + log_x_given_h[None, :]
        value = torch.logsumexp(joint.flatten(), 0) + 2 * np.log(step)
        model.float()
    return float(value)


def test_the_bound_reaches_the_brute_force_log_evidence() -> None:
    # Prepare
    model, x = tiny_model(), torch.tensor([[0.3, -0.8]])

    # Execute
    exact = brute_force_log_evidence(model, x)
    estimate = float(bound_samples(model, x, kappa=5000, repeats=4, seed=0).mean())

    # Assert
    assert abs(estimate - exact) < 0.05


def test_the_bound_grows_with_kappa_on_average_and_stays_below_the_evidence() -> None:
    # Prepare
    model, x = tiny_model(), torch.tensor([[1.5, 0.4]])
    exact = brute_force_log_evidence(model, x)

    # Execute
    means = [float(bound_samples(model, x, kappa, repeats=4000, seed=kappa).mean()) for kappa in (1, 2, 5, 20, 100)]

    # Assert
    assert all(a < b for a, b in pairwise(means))
    assert means[-1] < exact + 0.01


def test_snis_weights_sum_to_one_and_predictions_are_distributions() -> None:
    # Prepare
    generator = torch.Generator().manual_seed(0)
    log_weights = 50 * torch.randn(7, 9, generator=generator)
    class_probabilities = torch.softmax(torch.randn(7, 9, 4, generator=generator), -1)

    # Execute
    weights = snis_weights(log_weights)
    predicted = predictive_probabilities(log_weights, class_probabilities)

    # Assert
    torch.testing.assert_close(weights.sum(0), torch.ones(9))
    torch.testing.assert_close(predicted.sum(-1), torch.ones(9))
