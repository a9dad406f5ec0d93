"""The active party's networks in FALSE-VFL: its own block's, the top layer over the latents, and the classifier."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from fedmosaic.data.vertical_data import Likelihood, Shape
from fedmosaic.methods.vertical.false_vfl.params import FalseVFLParams
from fedmosaic.methods.vertical.networks import GaussianEncoder, LeadingDims, PartyModel, gaussian_log_prob, mlp


def party_model(shape: Shape, params: FalseVFLParams, likelihood: Likelihood, party: int) -> PartyModel:
    """Party ``party``'s encoder and decoder of its flat block of examples of ``shape``, with ``params.model``'s network if any."""
    body = None if params.model is None else params.model.build_on_block(shape, params.hidden, party=party)
    return PartyModel(math.prod(shape), params.hidden, params.latent, likelihood, params.variant == "II", body)


def build_classifier(params: FalseVFLParams, num_classes: int) -> nn.Module:
    """``p_phi(y | h)``'s logits of latents ``(..., latent)``: the perceptron, or ``params.head``'s network."""
    if params.head is None:
        return mlp(params.latent, params.hidden, num_classes)
    return LeadingDims(params.head.build((params.latent,), num_classes))


class ActiveModel(nn.Module):
    """The active party's networks: its own block's (examples of ``shape``), the top layer's, and the classifier."""

    def __init__(self, shape: Shape, num_classes: int, params: FalseVFLParams, likelihood: Likelihood) -> None:
        super().__init__()
        self.party = party_model(shape, params, likelihood, 0)
        self.top_latent = params.top_latent
        self.top_encoder = GaussianEncoder(params.latent, params.hidden, params.top_latent)
        self.top_decoder = GaussianEncoder(params.top_latent, params.hidden, params.latent)
        self.classifier = build_classifier(params, num_classes)

    def generative_parameters(self) -> list[nn.Parameter]:
        """Every parameter but the classifier's (frozen in stage 2)."""
        return [p for name, p in self.named_parameters() if not name.startswith("classifier.")]

    def top_noise(self, h: Tensor, generator: torch.Generator) -> Tensor:
        """Standard normal draws for ``z ~ q(z | h)`` of every sample and row of ``h``, drawn on the CPU."""
        return torch.randn((*h.shape[:-1], self.top_latent), generator=generator).to(h.device)

    def log_weights(self, h: Tensor, q_mean: Tensor, q_logvar: Tensor, loglik: Tensor, noise: Tensor) -> Tensor:
        """``log p(z) p(h | z) p(x_obs | h) - log q(h | x_obs) q(z | h)`` per sample ``(kappa, n)``.

        ``z`` is drawn from ``q(z | h)`` with the standard normal ``noise``
        (:meth:`top_noise`); ``loglik`` sums the parties' terms.
        """
        z_mean, z_logvar = self.top_encoder(h)
        z = z_mean + torch.exp(0.5 * z_logvar) * noise
        h_mean, h_logvar = self.top_decoder(z)
        log_prior = gaussian_log_prob(z, z.new_zeros(()), z.new_zeros(()))
        return (
            log_prior
            + gaussian_log_prob(h, h_mean, h_logvar)
            + loglik
            - gaussian_log_prob(h, q_mean, q_logvar)
            - gaussian_log_prob(z, z_mean, z_logvar)
        )
