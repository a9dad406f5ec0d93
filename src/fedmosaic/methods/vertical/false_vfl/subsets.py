"""Random subsets of a row's present parties (FALSE-VFL's ``party_subsets`` training)."""

from __future__ import annotations

import torch
from torch import Tensor


def random_subsets(present: Tensor, keep: float, generator: torch.Generator) -> Tensor:
    """A random subset of each row's present parties: each kept with probability ``keep``, at least one.

    A row that would keep none keeps one of its present parties, drawn uniformly.

    Parameters
    ----------
    present : Tensor
        bool ``(n, K)``.
    keep : float
        Probability that a present party is kept.
    generator : torch.Generator
        Source of randomness.

    Returns
    -------
    Tensor
        bool ``(n, K)`` within ``present``; non-empty where ``present`` is.

    Examples
    --------
    >>> present = torch.tensor([[True, True, False], [False, False, True]])
    >>> subsets = random_subsets(present, 0.0, torch.Generator().manual_seed(0))
    >>> subsets.sum(1).tolist(), bool((subsets <= present).all())
    ([1, 1], True)
    """
    kept = present & (torch.rand(present.shape, generator=generator) < keep).to(present.device)
    keys = torch.rand(present.shape, generator=generator).to(present.device).masked_fill(~present, -1.0)
    one = torch.zeros_like(present).scatter_(1, keys.argmax(1, keepdim=True), True) & present
    return torch.where(kept.any(1, keepdim=True), kept, one)
