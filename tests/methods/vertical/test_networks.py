"""Specification of the party networks' Bernoulli likelihood: the cross-entropy of the pixels, computed without it."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from fedmosaic.methods.vertical.networks import SOFTPLUS_ROWS, FeatureDecoder, bernoulli_log_prob


def _cross_entropy(x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """``log p(x | logits)`` summed over features, as the cross-entropy computes it."""
    return -F.binary_cross_entropy_with_logits(logits, x.expand_as(logits), reduction="none").sum(-1)


@pytest.mark.parametrize("rows", [0, 3, SOFTPLUS_ROWS + 7])
def test_bernoulli_log_prob_equals_the_cross_entropy_of_the_decoder_outputs_in_values_and_gradients(rows: int) -> None:
    # Prepare: a decoder's last layer and pixels, more rows than one block of logits in the last case
    torch.manual_seed(0)
    layer = nn.Linear(6, 5)
    x, hidden = torch.rand(rows, 5), torch.randn(3, rows, 6, requires_grad=True)

    # Execute: the fused form and the cross-entropy, each with its gradients
    fused = bernoulli_log_prob(x, hidden, layer.weight, layer.bias)
    reference = _cross_entropy(x, layer(hidden))
    parameters = [hidden, layer.weight, layer.bias]
    fused_gradients = torch.autograd.grad(fused.sum(), parameters)
    reference_gradients = torch.autograd.grad(reference.sum(), parameters)

    # Assert: one value per sample and row, equal in value and gradient
    assert fused.shape == (3, rows)
    torch.testing.assert_close(fused, reference, atol=1e-5, rtol=1e-5)
    for a, b in zip(fused_gradients, reference_gradients, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_bernoulli_log_prob_of_stacked_layers_is_each_layers_own() -> None:
    # Prepare: two parties' last layers stacked, their pixels and samples
    torch.manual_seed(1)
    layers = [nn.Linear(4, 3), nn.Linear(4, 3)]
    x, hidden = torch.rand(2, 600, 3), torch.randn(2, 2, 600, 4)
    weight, bias = torch.stack([layer.weight for layer in layers]), torch.stack([layer.bias for layer in layers])

    # Execute
    with torch.no_grad():
        stacked = bernoulli_log_prob(x, hidden, weight, bias)
        alone = [_cross_entropy(x[k], layer(hidden[k])) for k, layer in enumerate(layers)]

    # Assert
    for k in range(2):
        torch.testing.assert_close(stacked[k], alone[k], atol=1e-5, rtol=1e-5)


def test_bernoulli_decoder_scores_pixels_by_their_cross_entropy() -> None:
    # Prepare
    torch.manual_seed(2)
    decoder = FeatureDecoder(latent=4, hidden=8, features=5, likelihood="bernoulli")
    x, h = torch.rand(7, 5), torch.randn(2, 7, 4)

    # Execute / Assert
    with torch.no_grad():
        torch.testing.assert_close(decoder.log_prob(x, h), _cross_entropy(x, decoder.net(h)), atol=1e-5, rtol=1e-5)
