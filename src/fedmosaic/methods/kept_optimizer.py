"""An optimizer's state kept by parameter name between rounds, in a client's state arrays.

A client whose optimizer starts afresh every round takes its first Adam steps
at about ``lr * sign(gradient)`` per parameter, whatever the gradient's size;
a client with fewer rows than a batch takes only a couple of such steps per
round, which can make the global model swing between two states from one
round to the next. Keeping the moments across rounds (as the client's own
state, like SCAFFOLD's control variate) removes that restart. Entries are
named by parameter, so they follow a model whose modules grow or are rewired:
a parameter whose shape changed starts afresh, one that disappeared is
forgotten.
"""

from __future__ import annotations

from collections.abc import MutableMapping

import numpy as np
import torch
from torch import nn

from fedmosaic.methods.arrays import to_array

PREFIX = "optimizer/"
"""Prefix of the kept optimizer state in a client's state arrays: ``optimizer/<parameter>/<entry>``."""


def restore_optimizer(
    optimizer: torch.optim.Optimizer, model: nn.Module, kept: MutableMapping[str, np.ndarray]
) -> None:
    """Load the kept state of each of ``model``'s parameters that ``optimizer`` trains and whose shape still matches.

    Examples
    --------
    >>> model = torch.nn.Linear(2, 1)
    >>> optimizer = torch.optim.Adam(model.parameters())
    >>> kept = {"optimizer/bias/exp_avg": np.ones(1, np.float32), "optimizer/bias/exp_avg_sq": np.ones(1, np.float32),
    ...         "optimizer/bias/step": np.array(3.0, np.float32)}
    >>> restore_optimizer(optimizer, model, kept)
    >>> float(optimizer.state[model.bias]["step"])
    3.0
    """
    trained = {id(p) for group in optimizer.param_groups for p in group["params"]}
    for name, parameter in model.named_parameters():
        if id(parameter) not in trained:
            continue
        start = f"{PREFIX}{name}/"
        entries = {key.removeprefix(start): value for key, value in kept.items() if key.startswith(start)}
        if entries and all(v.shape in (parameter.shape, ()) for v in entries.values()):
            # Moments go to their parameter's device; a step count stays a CPU scalar, as PyTorch keeps it.
            optimizer.state[parameter] = {
                k: torch.from_numpy(np.array(v)).to(parameter.device if v.shape else "cpu") for k, v in entries.items()
            }


def keep_optimizer(optimizer: torch.optim.Optimizer, model: nn.Module, kept: MutableMapping[str, np.ndarray]) -> None:
    """Write the state of every parameter ``optimizer`` has trained into ``kept``; forget parameters ``model`` lost.

    Examples
    --------
    >>> model = torch.nn.Linear(2, 1)
    >>> optimizer = torch.optim.Adam(model.parameters())
    >>> model(torch.ones(1, 2)).sum().backward(); optimizer.step()
    >>> kept = {"optimizer/gone/step": np.array(1.0)}
    >>> keep_optimizer(optimizer, model, kept)
    >>> sorted(k for k in kept if k.startswith("optimizer/bias/"))
    ['optimizer/bias/exp_avg', 'optimizer/bias/exp_avg_sq', 'optimizer/bias/step']
    >>> "optimizer/gone/step" in kept
    False
    """
    names = dict(model.named_parameters())
    for key in [k for k in kept if k.startswith(PREFIX)]:
        if key.removeprefix(PREFIX).rsplit("/", 1)[0] not in names:
            del kept[key]
    for name, parameter in names.items():
        for entry, value in optimizer.state.get(parameter, {}).items():
            if isinstance(value, torch.Tensor):
                kept[f"{PREFIX}{name}/{entry}"] = to_array(value).copy()
