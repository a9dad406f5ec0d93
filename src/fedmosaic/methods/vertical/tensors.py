"""Small conversions between received arrays and tensors at the active party."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
import torch
from torch import Tensor

from fedmosaic.methods.arrays import to_array, to_tensor

EVALUATION = "evaluation."


def leaf(array: np.ndarray) -> Tensor:
    """A received array as a tensor whose gradient will be sent back."""
    return to_tensor(np.array(array)).requires_grad_(True)


def tensor(array: np.ndarray) -> Tensor:
    """A received array as a tensor on the run's device (copied: received arrays are read-only)."""
    return to_tensor(np.array(array))


def gradient(value: Tensor) -> np.ndarray:
    """The gradient of a :func:`leaf` (zeros if the loss did not reach it)."""
    return to_array(value.grad if value.grad is not None else torch.zeros_like(value))


def spread(values: Tensor, present: Tensor) -> Tensor:
    """``(n_present, d)`` values placed in the rows where ``present`` of an ``(n, d)`` zero tensor.

    Examples
    --------
    >>> spread(torch.ones(1, 2), torch.tensor([False, True])).tolist()
    [[0.0, 0.0], [1.0, 1.0]]
    """
    full = values.new_zeros((len(present), values.shape[-1]))
    return full.index_put((present.nonzero().squeeze(1),), values)


def evaluation_config(metrics: Mapping[str, float]) -> dict[str, Any]:
    """The last evaluation's metrics as checkpointable config entries."""
    return {EVALUATION + k: v for k, v in metrics.items()}


def evaluation_from_config(config: Mapping[str, Any]) -> dict[str, float]:
    """Inverse of :func:`evaluation_config`."""
    return {k[len(EVALUATION) :]: float(v) for k, v in config.items() if k.startswith(EVALUATION)}


def heard(present: Tensor, replied: Collection[int]) -> Tensor:
    """``present`` ``(n, K)`` with the columns of passive parties (clients ``k - 1``) not in ``replied`` set False.

    A party whose reply was rejected (or lost) counts as absent for the rows of that exchange.

    Examples
    --------
    >>> heard(torch.ones(1, 3, dtype=torch.bool), {1}).tolist()
    [[True, False, True]]
    """
    kept = present.clone()
    for party in range(1, present.shape[1]):
        if party - 1 not in replied:
            kept[:, party] = False
    return kept
