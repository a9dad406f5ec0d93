"""Counterfactual samples: factors of a sample replaced by those of a global mean.

For a batch of factors ``z`` (``(B, F)`` for an MLP, ``(B, F, H, W)`` for a
CNN), each factor of each sample is scored by how much it supports the true
class under the round's global model; the ``k`` least supporting factors are
replaced by a drawn global mean's factors to make a *positive* sample (same
label), and the ``k`` most supporting ones to make a *negative* sample (soft
label moved toward the mean's label).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor, nn
from torch.nn import functional as F


class Counterfactuals(NamedTuple):
    """The counterfactual samples of a batch.

    Parameters
    ----------
    positive : Tensor
        Factors with the ``k`` lowest-score ones replaced; label ``y``.
    negative : Tensor
        Factors with the ``k`` highest-score ones replaced.
    negative_target : Tensor
        Soft labels of ``negative``, shape ``(B, C)``.
    """

    positive: Tensor
    negative: Tensor
    negative_target: Tensor


def clip_k(k: int, num_factors: int) -> int:
    """``k`` clipped to ``num_factors // 2``, so the low and high sets are disjoint.

    Raises
    ------
    ValueError
        If there are fewer than 2 factors.

    Examples
    --------
    >>> clip_k(24, 64), clip_k(24, 10)
    (24, 5)
    """
    if num_factors < 2:
        raise ValueError(f"FedCFA needs at least 2 factors at the split, got {num_factors}")
    return min(k, num_factors // 2)


def factor_scores(decoder: nn.Module, z: Tensor, y: Tensor, scoring: str = "signed") -> Tensor:
    """Score of each factor of each sample: d(sum of true-class logits)/dz, signed or its magnitude.

    Parameters
    ----------
    decoder : torch.nn.Module
        The decoder of the round's frozen global model.
    z : Tensor
        Factors, ``(B, F)`` or ``(B, F, *spatial)``; not modified, and no
        gradient flows back into it.
    y : Tensor
        Integer labels, ``(B,)``.
    scoring : {"signed", "magnitude"}, default "signed"
        The signed gradient (the reference), or its absolute value.

    Returns
    -------
    Tensor
        ``(B, F)``: the gradient of ``sum_i decoder(z)[i, y_i]`` with respect
        to ``z``, averaged over the spatial dimensions of feature maps (then
        made absolute for ``magnitude``). As sample ``i``'s logits depend only
        on ``z_i``, row ``i`` is the gradient of its own true-class logit.

    Examples
    --------
    >>> import torch
    >>> decoder = torch.nn.Linear(2, 2, bias=False)
    >>> with torch.no_grad():
    ...     _ = decoder.weight.copy_(torch.tensor([[1.0, -2.0], [3.0, 4.0]]))
    >>> factor_scores(decoder, torch.zeros(2, 2), torch.tensor([0, 1])).tolist()
    [[1.0, -2.0], [3.0, 4.0]]
    >>> factor_scores(decoder, torch.zeros(2, 2), torch.tensor([0, 1]), "magnitude").tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    """
    probe = z.detach().requires_grad_(True)
    with torch.enable_grad():
        true_logits = decoder(probe).gather(1, y[:, None]).sum()
        (gradient,) = torch.autograd.grad(true_logits, probe)
    scores = gradient.flatten(2).mean(dim=2) if gradient.dim() > 2 else gradient
    return scores.abs() if scoring == "magnitude" else scores


def extreme_factors(scores: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """Boolean masks of each sample's ``k`` lowest- and ``k`` highest-score factors.

    Parameters
    ----------
    scores : Tensor
        ``(B, F)`` factor scores.
    k : int
        Factors per mask (at most ``F // 2`` for disjoint masks).

    Returns
    -------
    (Tensor, Tensor)
        ``low`` and ``high``, both ``(B, F)`` booleans with ``k`` true entries
        per row.

    Examples
    --------
    >>> import torch
    >>> low, high = extreme_factors(torch.tensor([[0.3, -1.0, 2.0, 0.0]]), 1)
    >>> low.int().tolist(), high.int().tolist()
    ([[0, 1, 0, 0]], [[0, 0, 1, 0]])
    """
    low = torch.zeros_like(scores, dtype=torch.bool)
    high = torch.zeros_like(scores, dtype=torch.bool)
    low.scatter_(1, scores.topk(k, dim=1, largest=False, sorted=False).indices, True)
    high.scatter_(1, scores.topk(k, dim=1, largest=True, sorted=False).indices, True)
    return low, high


def replace_factors(z: Tensor, donor: Tensor, mask: Tensor) -> Tensor:
    """``z`` with the factors selected by ``mask`` taken from ``donor``.

    Parameters
    ----------
    z, donor : Tensor
        Factors of the same shape, ``(B, F)`` or ``(B, F, *spatial)``.
    mask : Tensor
        ``(B, F)`` booleans; a selected factor is replaced whole (its entire
        feature map).

    Examples
    --------
    >>> import torch
    >>> replace_factors(torch.zeros(1, 3), torch.ones(1, 3), torch.tensor([[True, False, True]])).tolist()
    [[1.0, 0.0, 1.0]]
    """
    selected = mask.reshape(*mask.shape, *([1] * (z.dim() - 2)))
    return torch.where(selected, donor, z)


def negative_target(y_one_hot: Tensor, donor_y: Tensor, replaced_share: float) -> Tensor:
    """Soft label of a negative sample: ``(1 - s) y + s y_bar``.

    ``s`` is the share of factors replaced, ``k / F`` (the reference takes the
    mean of its replacement mask: ``0.375`` for 24 of 64 channels, giving
    ``0.625 y + 0.375 y_bar``).

    Examples
    --------
    >>> import torch
    >>> negative_target(torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]]), 24 / 64).tolist()
    [[0.625, 0.375]]
    """
    return (1.0 - replaced_share) * y_one_hot + replaced_share * donor_y


def counterfactuals(z: Tensor, y: Tensor, donor_z: Tensor, donor_y: Tensor, scores: Tensor, k: int) -> Counterfactuals:
    """The positive and negative counterfactual samples of a batch.

    Parameters
    ----------
    z : Tensor
        The batch's factors, ``(B, F, ...)`` (detach them to train the
        decoder only).
    y : Tensor
        Integer labels, ``(B,)``.
    donor_z : Tensor
        Factors of the global mean drawn for each sample, shaped like ``z``.
    donor_y : Tensor
        Labels of those means, ``(B, C)`` probability vectors.
    scores : Tensor
        ``(B, F)`` factor scores (:func:`factor_scores`).
    k : int
        Factors to replace, clipped by :func:`clip_k`.

    Returns
    -------
    Counterfactuals
        The positive samples (label ``y``), the negative samples and their soft
        labels ``(1 - k/F) one_hot(y) + (k/F) donor_y``.
    """
    num_factors = z.shape[1]
    k = clip_k(k, num_factors)
    low, high = extreme_factors(scores, k)
    y_one_hot = F.one_hot(y, donor_y.shape[1]).to(donor_y.dtype)
    return Counterfactuals(
        positive=replace_factors(z, donor_z, low),
        negative=replace_factors(z, donor_z, high),
        negative_target=negative_target(y_one_hot, donor_y, k / num_factors),
    )
