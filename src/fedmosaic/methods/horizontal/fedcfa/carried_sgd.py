"""The reference's client optimizer: one SGD per client whose momentum is carried from round to round.

The reference builds its SGD once (momentum 0.9, weight decay 5e-4) and steps
it in every round; here each client keeps its SGD's momentum buffers in its
explicit state (arrays ``momentum/<parameter name>``), so that they survive a
checkpoint and travel in Flower's ``context.state``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from torch import nn

from fedmosaic.methods.arrays import to_array

#: The reference's SGD momentum and weight decay (``setup_optim`` of its serial client trainer).
MOMENTUM = 0.9
WEIGHT_DECAY = 5e-4
#: Prefix of the momentum buffers in the client state.
MOMENTUM_PREFIX = "momentum/"


def carried_sgd(model: nn.Module, lr: float, state: Mapping[str, np.ndarray]) -> torch.optim.SGD:
    """The reference's SGD over ``model``, with the momentum buffers found in ``state``.

    Parameters
    ----------
    model : torch.nn.Module
        Its trainable parameters are optimized.
    lr : float
        Learning rate.
    state : mapping of str to numpy.ndarray
        The client's state arrays; ``momentum/<name>`` restores the buffer of
        parameter ``<name>`` (none: the first step starts from zero momentum,
        as a new SGD does).

    Examples
    --------
    >>> import torch
    >>> model = torch.nn.Linear(2, 1)
    >>> optimizer = carried_sgd(model, 0.1, {})
    >>> model(torch.ones(1, 2)).sum().backward(); optimizer.step()
    >>> sorted(momentum_arrays(optimizer, model))
    ['momentum/bias', 'momentum/weight']
    >>> again = carried_sgd(model, 0.1, momentum_arrays(optimizer, model))
    >>> bool(torch.equal(again.state[model.bias]["momentum_buffer"], optimizer.state[model.bias]["momentum_buffer"]))
    True
    """
    trainable = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    optimizer = torch.optim.SGD([p for _, p in trainable], lr=lr, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY)
    for name, parameter in trainable:
        if MOMENTUM_PREFIX + name in state:
            buffer = torch.from_numpy(np.array(state[MOMENTUM_PREFIX + name], dtype=np.float32))
            optimizer.state[parameter]["momentum_buffer"] = buffer.reshape(parameter.shape).to(parameter.device)
    return optimizer


def momentum_arrays(optimizer: torch.optim.Optimizer, model: nn.Module) -> dict[str, np.ndarray]:
    """The momentum buffers of ``optimizer`` by parameter name of ``model``, as state arrays."""
    return {
        MOMENTUM_PREFIX + name: to_array(optimizer.state[p]["momentum_buffer"]).copy()
        for name, p in model.named_parameters()
        if optimizer.state.get(p, {}).get("momentum_buffer") is not None
    }
