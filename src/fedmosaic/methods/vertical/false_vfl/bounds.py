"""Importance-weighted bounds and self-normalised importance sampling."""

from __future__ import annotations

import math

import torch
from torch import Tensor


def iwae_bound(log_weights: Tensor) -> Tensor:
    """The kappa-sample importance-weighted bound of each row.

    Parameters
    ----------
    log_weights : Tensor
        ``(kappa, n)``: ``log p(x, h_l) - log q(h_l | x)`` for samples ``h_l ~ q``.

    Returns
    -------
    Tensor
        ``(n,)``: ``log (1/kappa) sum_l exp(log_weights[l])``.

    Examples
    --------
    >>> float(iwae_bound(torch.zeros(4, 1)))
    0.0
    """
    return torch.logsumexp(log_weights, dim=0) - math.log(log_weights.shape[0])


def snis_weights(log_weights: Tensor) -> Tensor:
    """Self-normalised importance weights ``w_l = r_l / sum_j r_j`` over the samples (dimension 0).

    Examples
    --------
    >>> snis_weights(torch.log(torch.tensor([[1.0], [3.0]]))).squeeze().round(decimals=6).tolist()
    [0.25, 0.75]
    """
    return torch.softmax(log_weights, dim=0)


def effective_sample_size(log_weights: Tensor) -> Tensor:
    """Kish's effective sample size ``1 / sum_l w_l^2`` of the self-normalised weights of each row.

    It runs from 1 (one sample carries all the weight) to the number of samples (equal weights).

    Examples
    --------
    >>> effective_sample_size(torch.zeros(4, 1)).tolist(), effective_sample_size(torch.tensor([[0.0], [-1e9]])).tolist()
    ([4.0], [1.0])
    """
    return 1 / (snis_weights(log_weights) ** 2).sum(0)
