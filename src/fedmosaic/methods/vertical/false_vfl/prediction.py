"""FALSE-VFL's prediction: latent draws, self-normalised importance sampling and the rules that choose between SNIS and the posterior mean."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from fedmosaic.methods.vertical.false_vfl.bounds import snis_weights

LATENT_ROWS = 2**18
"""Most latent rows (samples x rows) one block of importance sampling evaluates.

A block's decoder outputs are then at most ``LATENT_ROWS`` x a party's
features: 205 MB for a Fashion-MNIST patch of 196 pixels, where 1,000
samples of the 10,000 test rows at once would be 7.8 GB per party.
"""


def row_blocks(rows: int, samples: int, budget: int | None = None) -> list[slice]:
    """Consecutive blocks of ``rows`` rows, each at most ``budget`` latent rows (``samples`` per row) and one row at least.

    ``budget`` defaults to :data:`LATENT_ROWS`.

    Examples
    --------
    >>> row_blocks(5, 2, budget=4)
    [slice(0, 2, None), slice(2, 4, None), slice(4, 5, None)]
    >>> row_blocks(3, 1000, budget=4)
    [slice(0, 1, None), slice(1, 2, None), slice(2, 3, None)]
    >>> row_blocks(0, 20)
    [slice(0, 0, None)]
    """
    size = max(1, (LATENT_ROWS if budget is None else budget) // samples)
    return [slice(start, min(start + size, rows)) for start in range(0, max(rows, 1), size)]


def class_probabilities(classifier: nn.Module, h: Tensor) -> Tensor:
    """``softmax(classifier(h))`` of samples ``h`` ``(samples, n, d)``: ``(samples, n, classes)``, by blocks of rows."""
    return torch.cat(
        [torch.softmax(classifier(h[:, block]), -1) for block in row_blocks(h.shape[1], h.shape[0])], dim=1
    )


def sample(mean: Tensor, logvar: Tensor, samples: int, generator: torch.Generator) -> Tensor:
    """``samples`` draws of the diagonal Gaussians ``(n, d)``: ``(samples, n, d)``."""
    noise = torch.randn((samples, *mean.shape), generator=generator).to(mean.device)  # drawn on the CPU, as everywhere
    std = torch.exp(0.5 * logvar)
    if torch.is_grad_enabled() and (mean.requires_grad or logvar.requires_grad):
        return mean + std * noise
    return noise.mul_(std).add_(mean)  # without gradients the draws' memory holds the samples


RULE_ACCURACIES = ("snis_accuracy", "mean_accuracy", "ess_accuracy")
"""The diagnostics that hold each prediction rule's accuracy."""


def rule_probabilities(rule: str, snis: Tensor, at_mean: Tensor, ess: Tensor, floor: float) -> Tensor:
    """The class probabilities of a prediction rule: ``snis``, ``mean``, or ``ess`` (the mean where ``ess < floor``).

    Parameters
    ----------
    rule : {"snis", "mean", "ess"}
        The rule (``FalseVFLParams.prediction``).
    snis, at_mean : Tensor
        ``(n, classes)``: SNIS's probabilities and the classifier's at the fused posterior mean.
    ess : Tensor
        ``(n,)``: the effective sample size of each row's weights.
    floor : float
        The effective sample size below which ``ess`` takes the mean.

    Examples
    --------
    >>> snis, at_mean = torch.tensor([[1.0, 0.0], [1.0, 0.0]]), torch.tensor([[0.0, 1.0], [0.0, 1.0]])
    >>> rule_probabilities("ess", snis, at_mean, torch.tensor([1.2, 5.0]), 2.0).argmax(-1).tolist()
    [1, 0]
    """
    if rule == "snis":
        return snis
    if rule == "mean":
        return at_mean
    return torch.where((ess < floor)[:, None], at_mean, snis)


def predictive_probabilities(log_weights: Tensor, class_probabilities: Tensor) -> Tensor:
    """``sum_l w_l p_phi(y | h_l)`` with self-normalised weights.

    Parameters
    ----------
    log_weights : Tensor
        ``(samples, n)`` log importance weights.
    class_probabilities : Tensor
        ``(samples, n, classes)``.

    Returns
    -------
    Tensor
        ``(n, classes)``, rows summing to one.
    """
    return (snis_weights(log_weights)[..., None] * class_probabilities).sum(0)
