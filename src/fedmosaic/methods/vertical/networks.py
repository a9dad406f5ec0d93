"""The small networks of the vertical methods: MLPs, Gaussian encoders, per-party decoders."""

from __future__ import annotations

import math
from itertools import pairwise

import torch
from torch import Tensor, nn
from torch.nn import functional as F
from typing_extensions import override

from fedmosaic.data.vertical_data import Likelihood

LOG_2PI = math.log(2 * math.pi)
LOGVAR_RANGE = (-8.0, 6.0)
"""Log-variances are clamped to this range, which keeps importance weights finite."""


def mlp(inputs: int, hidden: int, outputs: int, layers: int = 1) -> nn.Sequential:
    """A perceptron with ``layers`` hidden layers of ``hidden`` units and ReLU.

    Examples
    --------
    >>> mlp(3, 8, 2)(torch.zeros(5, 3)).shape
    torch.Size([5, 2])
    >>> sum(isinstance(m, nn.Linear) for m in mlp(3, 8, 2, layers=3))
    4
    """
    widths = [inputs] + [hidden] * layers
    modules: list[nn.Module] = []
    for width_in, width_out in pairwise(widths):  # each ReLU overwrites its Linear's fresh output
        modules += [nn.Linear(width_in, width_out), nn.ReLU(inplace=True)]
    return nn.Sequential(*modules, nn.Linear(widths[-1], outputs))


def gaussian_log_prob(x: Tensor, mean: Tensor, logvar: Tensor) -> Tensor:
    """Log density of a diagonal Gaussian, summed over the last dimension.

    Examples
    --------
    >>> round(float(gaussian_log_prob(torch.zeros(1), torch.zeros(1), torch.zeros(1))), 4)
    -0.9189
    """
    return -0.5 * (LOG_2PI + logvar + (x - mean) ** 2 * torch.exp(-logvar)).sum(-1)


SOFTPLUS_ROWS = 512
"""Rows of logits :func:`bernoulli_log_prob` computes at a time: a few hundred kilobytes per party, so
that each block's logits are summed while they are still in the processor's cache."""


def bernoulli_log_prob(x: Tensor, hidden: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """``log p(x | h)`` of Bernoulli pixels summed over features, from the decoder's last hidden layer.

    With logits ``l = W a + b`` of the hidden activations ``a``, the sum is
    ``x . l - sum softplus(l)``, and ``x . l = a . (W^T x) + x . b`` is
    computed per row rather than per sample: of the cross-entropy's
    per-feature work only the softplus of the logits remains, done a block
    of :data:`SOFTPLUS_ROWS` rows at a time.

    Parameters
    ----------
    x : Tensor
        ``(..., n, d)`` pixel values in [0, 1].
    hidden : Tensor
        ``(..., kappa, n, m)`` the last hidden layer's activations of each sample.
    weight, bias : Tensor
        ``(..., d, m)`` and ``(..., d)``: the last linear layer, with at most one leading dimension.

    Returns
    -------
    Tensor
        ``(..., kappa, n)``.

    Examples
    --------
    >>> layer = nn.Linear(3, 4)
    >>> x, hidden = torch.rand(5, 4), torch.randn(2, 5, 3)
    >>> expected = -F.binary_cross_entropy_with_logits(layer(hidden), x.expand(2, 5, 4), reduction="none").sum(-1)
    >>> torch.allclose(bernoulli_log_prob(x, hidden, layer.weight, layer.bias), expected, atol=1e-5)
    True
    """
    kappa, n = hidden.shape[-3:-1]
    flat = hidden.flatten(-3, -2)
    softplus = torch.cat(
        [
            F.softplus(_linear(flat[..., start : start + SOFTPLUS_ROWS, :], weight, bias)).sum(-1)
            for start in range(0, max(flat.shape[-2], 1), SOFTPLUS_ROWS)
        ],
        dim=-1,
    )
    cross = (hidden * torch.matmul(x, weight).unsqueeze(-3)).sum(-1) + (x * bias[..., None, :]).sum(-1).unsqueeze(-2)
    per_sample: Tensor = softplus.unflatten(-1, (kappa, n))
    return cross - per_sample


def _linear(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """``x W^T + b`` for one layer (``weight`` ``(d, m)``) or a stack of them (``(K, d, m)``, ``x`` ``(K, rows, m)``)."""
    if weight.dim() == 2:
        return F.linear(x, weight, bias)
    return torch.baddbmm(bias[:, None, :], x, weight.transpose(1, 2))


class GaussianEncoder(nn.Module):
    """``x -> (mean, log-variance)`` of a diagonal Gaussian over ``latent`` dimensions.

    Parameters
    ----------
    inputs, hidden, latent : int
        Widths of ``x``, of the hidden layer, and of the latent.
    body : torch.nn.Module or None, default None
        A network of the user's own from ``x`` to ``hidden`` features, in
        place of the perceptron's first layer; ReLU and the linear layer to
        the mean and log-variance follow it.
    """

    def __init__(self, inputs: int, hidden: int, latent: int, body: nn.Module | None = None) -> None:
        super().__init__()
        if body is None:
            self.net = mlp(inputs, hidden, 2 * latent)
        else:
            self.net = nn.Sequential(body, nn.ReLU(), nn.Linear(hidden, 2 * latent))

    @override
    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        mean, logvar = self.net(x).chunk(2, dim=-1)
        return mean, logvar.clamp(*LOGVAR_RANGE)


class FeatureDecoder(nn.Module):
    """``p(x | h)``: Gaussian with a learned per-feature variance, or Bernoulli for pixels.

    Parameters
    ----------
    latent : int
        Width of ``h``.
    hidden : int
        Hidden units.
    features : int
        Width of ``x``.
    likelihood : {"gaussian", "bernoulli"}
        Real features or pixels in [0, 1] (cross-entropy of the pixel values).
    """

    def __init__(self, latent: int, hidden: int, features: int, likelihood: Likelihood) -> None:
        super().__init__()
        self.net = mlp(latent, hidden, features)
        self.likelihood = likelihood
        self.logvar = nn.Parameter(torch.zeros(features)) if likelihood == "gaussian" else None

    def log_prob(self, x: Tensor, h: Tensor) -> Tensor:
        """``log p(x | h)`` ``(kappa, n)`` summed over features, of ``x`` ``(n, d)`` under each sample of ``h`` ``(kappa, n, latent)``."""
        if self.logvar is None:
            last = self.net[-1]
            assert isinstance(last, nn.Linear)  # mlp ends in a linear layer
            return bernoulli_log_prob(x, self.net[:-1](h), last.weight, last.bias)
        return gaussian_log_prob(x, self.net(h), self.logvar.clamp(*LOGVAR_RANGE))

    def mean(self, h: Tensor) -> Tensor:
        """The expected features given ``h``."""
        out = self.net(h)
        return torch.sigmoid(out) if self.logvar is None else out


class PartyModel(nn.Module):
    """What one party of FALSE-VFL holds: encoder, decoder and (variant II) mask model.

    Parameters
    ----------
    features : int
        Width of the party's block.
    hidden : int
        Hidden units.
    latent : int
        Width of ``h``.
    likelihood : {"gaussian", "bernoulli"}
        How the block is modelled.
    mask_model : bool, default False
        Variant II: a logistic model ``p_psi(m = missing | x)`` of the party's own block.
    encoder_body : torch.nn.Module or None, default None
        The encoder's own network (:class:`GaussianEncoder`'s ``body``).
    """

    def __init__(
        self,
        features: int,
        hidden: int,
        latent: int,
        likelihood: Likelihood,
        mask_model: bool = False,
        encoder_body: nn.Module | None = None,
    ) -> None:
        super().__init__()
        self.encoder = GaussianEncoder(features, hidden, latent, encoder_body)
        self.decoder = FeatureDecoder(latent, hidden, features, likelihood)
        self.mask = nn.Linear(features, 1) if mask_model else None

    def log_likelihood(self, x: Tensor, present: Tensor, h: Tensor) -> Tensor:
        """The party's term of ``log p(x_obs, m | h)`` for each sample and row.

        Parameters
        ----------
        x : Tensor
            ``(n, d)`` features; rows that are not present are ignored (may hold anything finite).
        present : Tensor
            bool ``(n,)``.
        h : Tensor
            ``(kappa, n, latent)`` samples.

        Returns
        -------
        Tensor
            ``(kappa, n)``: ``log p(x | h)`` on present rows, 0 elsewhere; in
            variant II plus ``log p_psi(m | x)`` with the decoder's mean standing
            in for the features of absent rows.
        """
        observed = torch.where(present[None, :], self.decoder.log_prob(x, h), 0.0)
        if self.mask is None:
            return observed
        expected = self.decoder.mean(h)
        stand_in = torch.where(present[None, :, None], x.expand_as(expected), expected)
        logit = self.mask(stand_in).squeeze(-1)
        mask_term = torch.where(present[None, :], F.logsigmoid(-logit), F.logsigmoid(logit))
        return observed + mask_term


class LeadingDims(nn.Module):
    """A module of ``(batch, features)`` inputs applied to inputs of any leading dimensions (``(samples, rows, features)``).

    Examples
    --------
    >>> LeadingDims(nn.Linear(3, 2))(torch.zeros(4, 5, 3)).shape
    torch.Size([4, 5, 2])
    """

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module

    def forward(self, x: Tensor) -> Tensor:
        """``module`` on the rows of ``x`` flattened, its outputs given back ``x``'s leading dimensions."""
        out: Tensor = self.module(x.flatten(0, -2)).unflatten(0, x.shape[:-1])
        return out
