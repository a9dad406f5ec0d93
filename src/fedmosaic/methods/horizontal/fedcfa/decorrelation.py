"""Factor decorrelation (FDC): penalise factors that carry the same information."""

from __future__ import annotations

import torch
from torch import Tensor

#: Added to each factor's variance, so that a constant factor (e.g. a dead
#: ReLU unit) has correlation 0 with every other and a finite gradient. A
#: floor of 1e-8 let a nearly dead unit (standard deviation 1e-4) divide its
#: covariances by about 1e-8 and blow up their gradients; 1e-4 (a standard
#: deviation of 0.01) keeps them bounded while barely changing the
#: correlation of units that vary on the scale of their activations.
VARIANCE_EPS = 1e-4


def factor_decorrelation(z: Tensor, floor: float = VARIANCE_EPS) -> Tensor:
    """Mean absolute Pearson correlation over all pairs of factors, across the batch.

    Parameters
    ----------
    z : Tensor
        Factors, ``(B, F)``, or ``(B, F, *spatial)`` feature maps, whose
        channels are first averaged over space.
    floor : float, default VARIANCE_EPS
        Added to each factor's variance.

    Returns
    -------
    Tensor
        A scalar in ``[0, 1]``: the mean of ``|corr(z_i, z_j)|`` over the
        ``F (F - 1) / 2`` pairs ``i < j``, with each factor's variance taken
        over the batch (plus ``floor``); 0 when ``F < 2``.
        Differentiable with respect to ``z``.

    Examples
    --------
    >>> import torch
    >>> a = torch.tensor([0.0, 1.0, 2.0, 3.0])
    >>> round(float(factor_decorrelation(torch.stack([a, -2 * a, a ** 2], dim=1))), 4)
    0.9722
    """
    factors = z.flatten(2).mean(dim=2) if z.dim() > 2 else z
    num_factors = factors.shape[1]
    if num_factors < 2:
        return factors.new_zeros(())
    centred = factors - factors.mean(dim=0, keepdim=True)
    covariance = centred.T @ centred / len(factors)
    std = torch.sqrt(covariance.diagonal() + floor)
    correlation = covariance / (std[:, None] * std[None, :])
    off_diagonal = correlation.abs().sum() - correlation.diagonal().abs().sum()
    return off_diagonal / (num_factors * (num_factors - 1))
