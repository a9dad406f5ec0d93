"""One local training loop for every method, and classifier evaluation."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn import functional as F

from fedmosaic.devices import generator_on
from fedmosaic.methods.kept_optimizer import keep_optimizer, restore_optimizer
from fedmosaic.methods.train_params import TrainParams

LossFn = Callable[[nn.Module, Tensor, Tensor], Tensor]
DP_SGD_EPSILON = "dp_sgd_epsilon"
"""Metric of a client training with local DP-SGD: the epsilon it has spent so far."""


def make_optimizer(model: nn.Module, params: TrainParams) -> torch.optim.Optimizer:
    """The optimizer ``params`` describes, over the trainable parameters of ``model``."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    if params.optimizer == "adam":
        return torch.optim.Adam(trainable, lr=params.lr, weight_decay=params.weight_decay)
    return torch.optim.SGD(trainable, lr=params.lr, momentum=params.momentum, weight_decay=params.weight_decay)


def cross_entropy_loss(model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
    """Mean cross-entropy of ``model`` on a batch: the default loss."""
    return F.cross_entropy(model(x), y)


def train_epochs(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    *,
    params: TrainParams,
    generator: torch.Generator,
    loss_fn: LossFn = cross_entropy_loss,
    optimizer: torch.optim.Optimizer | None = None,
    kept: MutableMapping[str, np.ndarray] | None = None,
) -> float:
    """Train ``model`` in place for ``params.epochs`` epochs of shuffled mini-batches.

    Parameters
    ----------
    model : torch.nn.Module
        Trained in place.
    x, y : torch.Tensor
        Inputs and integer labels.
    params : TrainParams
        Epochs, batch size and optimizer.
    generator : torch.Generator
        Source of the shuffling order (derive it from the client context).
    loss_fn : callable (model, x, y) -> Tensor, default cross-entropy
        The loss of one batch; methods add their terms here.
    optimizer : torch.optim.Optimizer or None, default None
        Steps the model's parameters; None builds the one ``params``
        describes, afresh (:func:`make_optimizer`).
    kept : mutable mapping of str to numpy.ndarray, optional
        The optimizer state kept between calls (a client's state arrays, for
        ``optimizer_state = "kept"``): read into the optimizer before training,
        written after it (:mod:`fedmosaic.methods.kept_optimizer`). None starts afresh.

    Returns
    -------
    float
        Mean loss over all examples seen.

    Examples
    --------
    >>> import torch
    >>> model = torch.nn.Linear(2, 2)
    >>> x, y = torch.randn(8, 2), torch.tensor([0, 1] * 4)
    >>> loss = train_epochs(model, x, y, params=TrainParams(batch_size=4),
    ...                     generator=torch.Generator().manual_seed(0))
    >>> loss > 0
    True
    """
    optimizer = make_optimizer(model, params) if optimizer is None else optimizer
    base = optimizer
    if kept is not None:
        restore_optimizer(base, model, kept)
    # DP-SGD: Opacus's hooks on the model's layers record per-example gradients; the loss
    # still calls the model itself, so methods that take it apart keep working.
    private = params.dp_noise_multiplier > 0
    hooks = _per_sample(model) if private else None
    if private:
        optimizer = _private(optimizer, params, generator_on(x.device, generator))
    model.train()
    total = torch.zeros((), device=x.device)
    seen = 0
    try:
        for index in batch_indices(len(x), params, generator, x.device):
            # The optimizer's zero_grad passes through TorchDynamo's wrapper (about 2% of a small
            # model's step); the model's sets the same gradients to None. Opacus's clears its own.
            (optimizer if private else model).zero_grad(set_to_none=True)
            loss = loss_fn(model, x[index], y[index])
            if private:
                _private_backward(loss)
            else:
                loss.backward()
            optimizer.step()
            total += loss.detach() * len(index)
            seen += len(index)
    finally:
        if hooks is not None:
            hooks._close()  # removes Opacus's hooks and per-example gradients from the model
    if kept is not None:
        keep_optimizer(base, model, kept)
    return float(total) / max(seen, 1)


def _private_backward(loss: Tensor) -> None:
    """``loss.backward()`` under Opacus's hooks."""
    with warnings.catch_warnings():
        # Opacus's hooks fire on the first layer, whose input needs no gradient: expected.
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        loss.backward()


def batch_indices(n: int, params: TrainParams, generator: torch.Generator, device: torch.device) -> Iterator[Tensor]:
    """The rows of each mini-batch of ``params.epochs`` shuffled epochs over ``n`` rows.

    Each epoch's order is drawn from ``generator`` when its first batch is
    asked for, so draws made between batches (a loss's own) keep their place.
    The order is drawn on the CPU, as on every device: the same seed shuffles
    the same way everywhere.

    Examples
    --------
    >>> batches = batch_indices(5, TrainParams(batch_size=2), torch.Generator().manual_seed(0), torch.device("cpu"))
    >>> [len(index) for index in batches]
    [2, 2, 1]
    """
    for _ in range(params.epochs):
        order = torch.randperm(n, generator=generator).to(device)
        for start in range(0, n, params.batch_size):
            yield order[start : start + params.batch_size]


def _per_sample(model: nn.Module) -> Any:
    from opacus import GradSampleModule  # imported on use: only DP-SGD needs it

    return GradSampleModule(model)


def _private(
    optimizer: torch.optim.Optimizer, params: TrainParams, generator: torch.Generator
) -> torch.optim.Optimizer:
    from opacus.optimizers import DPOptimizer

    private: torch.optim.Optimizer = DPOptimizer(
        optimizer,
        noise_multiplier=params.dp_noise_multiplier,
        max_grad_norm=params.dp_max_grad_norm,
        expected_batch_size=params.batch_size,
        generator=generator,
    )
    return private


def dp_sgd_epsilon(params: TrainParams, num_examples: int, rounds: int) -> float:
    """Epsilon a client has spent with local DP-SGD after training in ``rounds`` rounds (Opacus's RDP accountant).

    Each batch is one Gaussian step with sampling rate ``batch_size / num_examples``
    (batches are shuffled, not Poisson-sampled: the usual approximation).
    """
    from opacus.accountants import RDPAccountant

    if params.dp_noise_multiplier == 0 or rounds == 0:
        return 0.0 if rounds == 0 else float("inf")
    steps = rounds * params.epochs * -(-num_examples // params.batch_size)
    accountant = RDPAccountant()
    for _ in range(steps):
        accountant.step(
            noise_multiplier=params.dp_noise_multiplier, sample_rate=min(1.0, params.batch_size / num_examples)
        )
    return float(accountant.get_epsilon(params.dp_delta))


@torch.no_grad()
def evaluate_classifier(model: nn.Module, x: Tensor, y: Tensor, *, batch_size: int = 2048) -> dict[str, float]:
    """Accuracy and mean cross-entropy of ``model`` on ``(x, y)``.

    Returns
    -------
    dict
        ``{"accuracy": float, "loss": float}``.
    """
    model.eval()
    correct = torch.zeros((), dtype=torch.long, device=x.device)
    loss = 0.0  # summed in float64 on the CPU: MPS has no float64 tensors
    for start in range(0, len(x), batch_size):
        logits = model(x[start : start + batch_size])
        target = y[start : start + batch_size]
        correct += (logits.argmax(dim=1) == target).sum()
        loss += float(F.cross_entropy(logits, target, reduction="sum"))
    return {"accuracy": float(correct) / len(x), "loss": loss / len(x)}
