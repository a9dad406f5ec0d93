"""FedMix's and NaiveMix's losses: local samples mixed with other clients' means."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from fedmosaic.methods.horizontal.fedmix.params import Variant


def naivemix_loss(model: nn.Module, x: Tensor, y: Tensor, mean_x: Tensor, mean_y: Tensor, lam: float) -> Tensor:
    """NaiveMix's loss of a batch: mixup of each sample with a global mean.

    ``mean((1 - lam) CE(f(x~), y) + lam CE(f(x~), mean_y))`` with
    ``x~ = (1 - lam) x + lam mean_x``; the second cross-entropy is against
    the soft label ``mean_y``.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier f.
    x, y : torch.Tensor
        A batch of inputs ``(B, ...)`` and integer labels ``(B,)``.
    mean_x, mean_y : torch.Tensor
        The global mean drawn for each sample: ``(B, ...)`` and ``(B, C)``.
    lam : float
        Mixing weight.

    Examples
    --------
    >>> model = nn.Linear(2, 2)
    >>> x, y = torch.ones(3, 2), torch.tensor([0, 1, 1])
    >>> bool(naivemix_loss(model, x, y, torch.zeros(3, 2), torch.full((3, 2), 0.5), 0.1) > 0)
    True
    """
    logits = model((1 - lam) * x + lam * mean_x)
    return (1 - lam) * F.cross_entropy(logits, y) + lam * F.cross_entropy(logits, mean_y)


def fedmix_loss(model: nn.Module, x: Tensor, y: Tensor, mean_x: Tensor, mean_y: Tensor, lam: float) -> Tensor:
    """FedMix's loss of a batch: global mixup to first order in ``lam``.

    With ``s = (1 - lam) x``, the mean over the batch of::

        (1 - lam) CE(f(s), y) + lam CE(f(s), mean_y)
            + lam (1 - lam) < d CE(f(s), y) / d s , mean_x >

    The input gradient is taken with ``create_graph=True`` so that the last
    term is differentiated with respect to the parameters (double backward).
    Each sample's gradient is that of its own loss, which assumes the model
    treats samples independently (no batch normalisation in training mode).

    Parameters
    ----------
    model : torch.nn.Module
        The classifier f.
    x, y : torch.Tensor
        A batch of inputs ``(B, ...)`` and integer labels ``(B,)``.
    mean_x, mean_y : torch.Tensor
        The global mean drawn for each sample: ``(B, ...)`` and ``(B, C)``.
    lam : float
        Mixing weight.

    Examples
    --------
    >>> model = nn.Linear(2, 2)
    >>> x, y = torch.ones(3, 2), torch.tensor([0, 1, 1])
    >>> fedmix_loss(model, x, y, torch.zeros(3, 2), torch.full((3, 2), 0.5), 0.1).requires_grad
    True
    """
    scaled = ((1 - lam) * x).detach().requires_grad_(True)
    logits = model(scaled)
    own = F.cross_entropy(logits, y, reduction="none")
    mixed = F.cross_entropy(logits, mean_y, reduction="none")
    (gradient,) = torch.autograd.grad(own.sum(), scaled, create_graph=True)
    taylor = (gradient * mean_x).flatten(start_dim=1).sum(dim=1)
    return ((1 - lam) * own + lam * mixed + lam * (1 - lam) * taylor).mean()


_LOSSES = {"fedmix": fedmix_loss, "naivemix": naivemix_loss}


@dataclass
class MixingLoss:
    """The loss of one batch, each sample mixed with a global mean drawn at random.

    Parameters
    ----------
    means_x, means_y : torch.Tensor
        The global means the client holds: ``(n, ...)`` and ``(n, C)``.
    lam : float
        Mixing weight.
    variant : {"fedmix", "naivemix"}
        Which loss: :func:`fedmix_loss` or :func:`naivemix_loss`.
    generator : torch.Generator
        Draws the mean of each sample (derive it from the client context).

    Examples
    --------
    >>> loss = MixingLoss(torch.zeros(1, 2), torch.full((1, 2), 0.5), 0.1, "naivemix",
    ...                   torch.Generator().manual_seed(0))
    >>> bool(loss(nn.Linear(2, 2), torch.ones(3, 2), torch.tensor([0, 1, 1])) > 0)
    True
    """

    means_x: Tensor
    means_y: Tensor
    lam: float
    variant: Variant
    generator: torch.Generator

    def __call__(self, model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
        """The loss of a batch mixed with means drawn from the shared ones."""
        drawn = torch.randint(len(self.means_x), (len(x),), generator=self.generator).to(self.means_x.device)
        return _LOSSES[self.variant](model, x, y, self.means_x[drawn], self.means_y[drawn], self.lam)
