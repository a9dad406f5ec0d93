"""The SimSiam pieces of FedHSSL: a party's networks, the losses, the augmentations, one local epoch.

Every party (active or passive) holds a :class:`SimSiamParty`: an encoder
(input layer, ReLU, top layer), a projector and a predictor. Only the input
layer depends on the party's width; everything above it has the same shape
at every party and is what FedHSSL averages (:func:`top_layers`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn import functional as F

from fedmosaic.federation.aggregate import weighted_average
from fedmosaic.methods.arrays import load_arrays, model_to_arrays
from fedmosaic.methods.vertical.networks import mlp

INPUT_LAYER = "encoder.0."
"""Prefix of the party-specific input layer's tensors (never averaged)."""


def batch_norm(width: int, affine: bool = True) -> nn.BatchNorm1d:
    """SimSiam's batch normalisation, always over the batch at hand (no running statistics).

    The projector and predictor only ever see training batches (fine-tuning
    and prediction use the encoder alone), so no running statistics are kept,
    and the averaged top layers are parameters only.
    """
    return nn.BatchNorm1d(width, affine=affine, track_running_stats=False)


class SimSiamParty(nn.Module):
    """One party's encoder, projector and predictor.

    As in SimSiam, the projector (two layers here) normalises its hidden and
    output layers over the batch, and the predictor its hidden layer; this is
    what keeps the representations from collapsing to a constant. The
    encoder is the split baselines' one-hidden-layer MLP.

    Parameters
    ----------
    features : int
        Width of the party's block.
    hidden : int
        Hidden units of every MLP.
    embedding : int
        Width of the encoder's output, of the projection and of the prediction.
    layers : int, default 1
        Hidden layers of the encoder.

    Examples
    --------
    >>> party = SimSiamParty(5, 8, 4)
    >>> party(torch.zeros(2, 5)).shape, party.views(torch.zeros(2, 5))[1].shape
    (torch.Size([2, 4]), torch.Size([2, 4]))
    """

    def __init__(self, features: int, hidden: int, embedding: int, layers: int = 1) -> None:
        super().__init__()
        self.encoder = mlp(features, hidden, embedding, layers)
        self.projector = nn.Sequential(
            nn.Linear(embedding, hidden),
            batch_norm(hidden),
            nn.ReLU(),
            nn.Linear(hidden, embedding),
            batch_norm(embedding, affine=False),
        )
        self.predictor = nn.Sequential(
            nn.Linear(embedding, hidden), batch_norm(hidden), nn.ReLU(), nn.Linear(hidden, embedding)
        )

    def forward(self, x: Tensor) -> Tensor:
        """The representation used by fine-tuning: the encoder's output."""
        representation: Tensor = self.encoder(x)
        return representation

    def views(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """``(projection z, prediction p)`` of ``x``."""
        z = self.projector(self.encoder(x))
        return z, self.predictor(z)


def top_layers(model: SimSiamParty) -> dict[str, np.ndarray]:
    """Every tensor of ``model`` above the party-specific input layer, by name.

    Examples
    --------
    >>> sorted(top_layers(SimSiamParty(5, 8, 4)))[:3]
    ['encoder.2.bias', 'encoder.2.weight', 'predictor.0.bias']
    """
    return {name: value for name, value in model_to_arrays(model).items() if not name.startswith(INPUT_LAYER)}


def average_top_layers(model: SimSiamParty, uploads: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """FedAvg of the top layers: ``model``'s own and the ``uploads`` with equal weights, loaded into ``model``.

    The input layer of ``model`` (whose width is the party's) is left as it is.

    Parameters
    ----------
    model : SimSiamParty
        The averaging party's networks; its top layers are replaced by the mean.
    uploads : sequence of mapping of str to numpy.ndarray
        The other parties' :func:`top_layers`.

    Returns
    -------
    dict of str to numpy.ndarray
        The mean top layers.
    """
    average = weighted_average([(top_layers(model), 1.0)] + [(upload, 1.0) for upload in uploads])
    load_arrays(model, average, strict=False)
    return average


def negative_cosine(prediction: Tensor, target: Tensor) -> Tensor:
    """SimSiam's ``D(p, z) = -cos(p, stop_gradient(z))``, averaged over rows.

    Examples
    --------
    >>> float(negative_cosine(torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 1.0]])))
    -0.7071067690849304
    """
    return -F.cosine_similarity(prediction, target.detach(), dim=-1).mean()


def cross_party_loss(projections: Tensor, predictions: Tensor) -> Tensor:
    """Cross-party SimSiam: every party's prediction against every other party's projection.

    ``mean over rows, parties j and parties k != j of D(p_j, z_k)``: two
    parties' views of one row play SimSiam's two augmentations.

    Parameters
    ----------
    projections, predictions : Tensor
        ``(n, K, e)`` of ``K >= 2`` parties on the same rows.

    Returns
    -------
    Tensor
        The scalar loss; gradients reach ``predictions`` only.
    """
    parties = projections.shape[1]
    cosines = torch.einsum("nje,nke->njk", F.normalize(predictions, dim=-1), F.normalize(projections.detach(), dim=-1))
    others = ~torch.eye(parties, dtype=torch.bool, device=cosines.device)
    return -(cosines * others).sum((1, 2)).mean() / (parties * (parties - 1))


def cross_party_targets(projections: Tensor) -> Tensor:
    """Each party's cross-party representation of a row: the mean of the other parties' unit projections.

    Parameters
    ----------
    projections : Tensor
        ``(n, K, e)``, ``K >= 2``.

    Returns
    -------
    Tensor
        ``(n, K, e)`` without gradient.

    Examples
    --------
    >>> cross_party_targets(torch.tensor([[[2.0, 0.0], [0.0, 3.0]]])).tolist()
    [[[0.0, 1.0], [1.0, 0.0]]]
    """
    unit = F.normalize(projections.detach(), dim=-1)
    return (unit.sum(1, keepdim=True) - unit) / (projections.shape[1] - 1)


def spread_targets(rows: np.ndarray, aligned: np.ndarray, targets: torch.Tensor) -> torch.Tensor:
    """The cross-party representations of ``aligned`` placed at their positions within ``rows``.

    Parameters
    ----------
    rows : numpy.ndarray
        Sorted positions of the rows a party holds (a superset of ``aligned``).
    aligned : numpy.ndarray
        Sorted positions of the aligned rows.
    targets : Tensor
        ``(len(aligned), e)``.

    Returns
    -------
    Tensor
        ``(len(rows), e)``, zeros at rows that are not aligned.

    Examples
    --------
    >>> spread_targets(np.array([2, 5, 7]), np.array([5]), torch.ones(1, 2)).tolist()
    [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]
    """
    full = targets.new_zeros((len(rows), targets.shape[-1]))
    full[np.searchsorted(rows, aligned)] = targets
    return full


def batch_count(rows: int, batch_size: int) -> int:
    """Number of nearly equal mini-batches of at most ``batch_size`` rows, each of two rows or more.

    Batch normalisation needs two rows, so a batch size of one is raised to
    two (and ``rows`` below two gives one batch, which callers skip).

    Examples
    --------
    >>> batch_count(300, 128), batch_count(3, 2), batch_count(1, 128)
    (3, 1, 1)
    """
    return max(1, min(math.ceil(rows / batch_size), rows // 2))


def augment(x: Tensor, noise_std: float, mask_rate: float, generator: torch.Generator) -> Tensor:
    """A random view of tabular or pixel features: Gaussian noise, then random feature masking.

    Parameters
    ----------
    x : Tensor
        ``(n, d)`` features.
    noise_std : float
        Standard deviation of the added noise.
    mask_rate : float
        Probability that a feature of a row is set to zero.
    generator : torch.Generator
        Source of randomness.

    Returns
    -------
    Tensor
        ``(n, d)``.
    """
    noisy = x + noise_std * torch.randn(x.shape, generator=generator).to(x.device)
    return noisy * (torch.rand(x.shape, generator=generator) >= mask_rate).to(x.device)


def local_epoch(
    model: SimSiamParty,
    optimizer: torch.optim.Optimizer,
    x: Tensor,
    targets: Tensor,
    pulled: Tensor,
    *,
    batch_size: int,
    noise_std: float,
    mask_rate: float,
    pull: float,
    generator: torch.Generator,
) -> float:
    """One epoch of local SimSiam on a party's rows, pulled toward the cross-party representations.

    Each mini-batch's loss is ``(D(p_a, z_b) + D(p_b, z_a)) / 2`` over two
    augmented views ``a``, ``b`` of the rows, plus
    ``pull * (D(p_a, t) + D(p_b, t)) / 2`` over the pulled rows of the batch,
    ``t`` being a row's cross-party representation. Mini-batches are of
    nearly equal sizes (:func:`batch_count`); an epoch over fewer than two
    rows does nothing.

    Parameters
    ----------
    model : SimSiamParty
        Trained in place.
    optimizer : torch.optim.Optimizer
        Over ``model``'s parameters.
    x : Tensor
        ``(n, d)`` the party's features of the rows it holds.
    targets : Tensor
        ``(n, e)`` cross-party representations (read where ``pulled``).
    pulled : Tensor
        bool ``(n,)``: rows with a cross-party representation (aligned rows).
    batch_size : int
        Rows per step.
    noise_std, mask_rate : float
        The augmentations (:func:`augment`).
    pull : float
        Weight of the pull term.
    generator : torch.Generator
        Source of the batches and augmentations.

    Returns
    -------
    float
        The epoch's mean loss per row (0 without rows).
    """
    if len(x) < 2:
        return 0.0
    total = 0.0
    order = torch.randperm(len(x), generator=generator).to(x.device)
    for batch in order.tensor_split(batch_count(len(x), batch_size)):
        rows = x[batch]
        z_a, p_a = model.views(augment(rows, noise_std, mask_rate, generator))
        z_b, p_b = model.views(augment(rows, noise_std, mask_rate, generator))
        loss = (negative_cosine(p_a, z_b) + negative_cosine(p_b, z_a)) / 2
        chosen = pulled[batch]
        if pull > 0 and chosen.any():
            target = targets[batch][chosen]
            loss = loss + pull * (negative_cosine(p_a[chosen], target) + negative_cosine(p_b[chosen], target)) / 2
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += float(loss.detach()) * len(batch)
    return total / len(x)
