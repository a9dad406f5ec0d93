"""Counterfactual samples: factors of a sample replaced by those of a global mean.

For a batch of factors ``z`` (``(B, F)`` for an MLP, ``(B, F, H, W)`` for a
CNN), each factor of each sample is scored by the gradient of its true-class
logit under the round's global model. A selection rule picks ``k`` factors per
sample from these scores; replaced by a drawn global mean's factors they make
a *positive* sample (same label) or a *negative* sample (soft label moved
toward the mean's label). The reference picks the ``k`` smallest signed scores
for the positive sample and the ``k`` largest for the negative one; here each
sample has its own rule (:data:`~fedmosaic.methods.horizontal.fedcfa.params.SelectionRule`).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from fedmosaic.methods.horizontal.fedcfa.params import SelectionRule, clip_k


class Counterfactuals(NamedTuple):
    """The counterfactual samples of a batch.

    Parameters
    ----------
    positive : Tensor
        Factors with those picked by the positive rule replaced; label ``y``.
    negative : Tensor
        Factors with those picked by the negative rule replaced.
    negative_target : Tensor
        Soft labels of ``negative``, shape ``(B, C)``.
    """

    positive: Tensor
    negative: Tensor
    negative_target: Tensor


def factor_scores(decoder: nn.Module, z: Tensor, y: Tensor) -> Tensor:
    """Score of each factor of each sample: the signed gradient d(sum of true-class logits)/dz.

    Parameters
    ----------
    decoder : torch.nn.Module
        The decoder of the round's frozen global model.
    z : Tensor
        Factors, ``(B, F)`` or ``(B, F, *spatial)``; not modified, and no
        gradient flows back into it.
    y : Tensor
        Integer labels, ``(B,)``.

    Returns
    -------
    Tensor
        ``(B, F)``: the gradient of ``sum_i decoder(z)[i, y_i]`` with respect
        to ``z``, averaged over the spatial dimensions of feature maps. As
        sample ``i``'s logits depend only on ``z_i``, row ``i`` is the
        gradient of its own true-class logit.

    Examples
    --------
    >>> import torch
    >>> decoder = torch.nn.Linear(2, 2, bias=False)
    >>> with torch.no_grad():
    ...     _ = decoder.weight.copy_(torch.tensor([[1.0, -2.0], [3.0, 4.0]]))
    >>> factor_scores(decoder, torch.zeros(2, 2), torch.tensor([0, 1])).tolist()
    [[1.0, -2.0], [3.0, 4.0]]
    """
    probe = z.detach().requires_grad_(True)
    with torch.enable_grad():
        true_logits = decoder(probe).gather(1, y[:, None]).sum()
        (gradient,) = torch.autograd.grad(true_logits, probe)
    scores: Tensor = gradient.flatten(2).mean(dim=2) if gradient.dim() > 2 else gradient
    return scores


def select_factors(scores: Tensor, k: int, rule: SelectionRule) -> Tensor:
    """Boolean mask of the ``k`` factors of each sample that ``rule`` picks.

    Parameters
    ----------
    scores : Tensor
        ``(B, F)`` signed factor scores (:func:`factor_scores`).
    k : int
        Factors picked per sample, at most ``F``.
    rule : SelectionRule
        ``"<signed|magnitude>-<smallest|largest>"``: rank the scores or their
        absolute values, and take the ``k`` smallest or largest.

    Returns
    -------
    Tensor
        ``(B, F)`` booleans with ``k`` true entries per row.

    Examples
    --------
    >>> import torch
    >>> from fedmosaic.methods.horizontal.fedcfa.params import SELECTION_RULES
    >>> scores = torch.tensor([[0.3, -1.0, 2.0, 0.0]])
    >>> [select_factors(scores, 1, rule).int().tolist() for rule in SELECTION_RULES]
    [[[0, 1, 0, 0]], [[0, 0, 1, 0]], [[0, 0, 0, 1]], [[0, 0, 1, 0]]]
    """
    scoring, end = rule.split("-")
    ranked = scores.abs() if scoring == "magnitude" else scores
    mask = torch.zeros_like(scores, dtype=torch.bool)
    return mask.scatter_(1, ranked.topk(k, dim=1, largest=end == "largest", sorted=False).indices, True)


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


def counterfactuals(
    z: Tensor,
    y: Tensor,
    donor_z: Tensor,
    donor_y: Tensor,
    scores: Tensor,
    k: int,
    rules: tuple[SelectionRule, SelectionRule] = ("signed-smallest", "signed-largest"),
) -> Counterfactuals:
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
    rules : (SelectionRule, SelectionRule), default ("signed-smallest", "signed-largest")
        Which factors the positive and the negative sample replace
        (:func:`select_factors`); the default is the reference's.

    Returns
    -------
    Counterfactuals
        The positive samples (label ``y``), the negative samples and their soft
        labels ``(1 - k/F) one_hot(y) + (k/F) donor_y``.
    """
    num_factors = z.shape[1]
    k = clip_k(k, num_factors)
    positive_rule, negative_rule = rules
    y_one_hot = F.one_hot(y, donor_y.shape[1]).to(donor_y.dtype)
    return Counterfactuals(
        positive=replace_factors(z, donor_z, select_factors(scores, k, positive_rule)),
        negative=replace_factors(z, donor_z, select_factors(scores, k, negative_rule)),
        negative_target=negative_target(y_one_hot, donor_y, k / num_factors),
    )
