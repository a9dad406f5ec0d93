"""Fusing the local Gaussian posteriors of the parties present in a row into ``q(h | x_obs)``."""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

Fusion = Literal["mean", "poe"]


def fuse_posteriors(mean: Tensor, logvar: Tensor, present: Tensor, rule: Fusion = "mean") -> tuple[Tensor, Tensor]:
    """The global posterior of each row from the posteriors of its present parties.

    ``"mean"`` (the paper's fusion): the mean of the present means, with the
    sum of the present precisions. ``"poe"``: the product of the present
    Gaussian experts, whose mean is precision-weighted. With one party present
    both return that party's posterior.

    Parameters
    ----------
    mean, logvar : Tensor
        ``(n, K, d)`` local posteriors; entries of absent parties are ignored
        (they must be finite).
    present : Tensor
        bool ``(n, K)``, at least one True per row.
    rule : {"mean", "poe"}, default "mean"
        The fusion rule.

    Returns
    -------
    (Tensor, Tensor)
        ``(n, d)`` mean and log-variance.

    Examples
    --------
    >>> m = torch.tensor([[[1.0], [3.0]]]); lv = torch.zeros(1, 2, 1)
    >>> fused, fused_logvar = fuse_posteriors(m, lv, torch.tensor([[True, True]]))
    >>> float(fused), round(float(fused_logvar.exp()), 3)
    (2.0, 0.5)
    """
    weight = present.to(mean.dtype)[..., None]
    precision = torch.exp(-logvar) * weight
    total_precision = precision.sum(dim=1)
    if rule == "poe":
        fused_mean = (precision * mean).sum(dim=1) / total_precision
    else:
        fused_mean = (weight * mean).sum(dim=1) / weight.sum(dim=1)
    return fused_mean, -torch.log(total_precision)
