"""An optimizer's moments as named arrays, so a party's training state fits a ClientState."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

OPTIMIZER_PREFIX = "opt."
"""Default prefix of an optimizer's arrays in a state."""


@dataclass(frozen=True)
class OptimizerSpec:
    """Which optimizer a party builds, with its hyper-parameters.

    Parameters
    ----------
    kind : {"adam", "sgd"}
        Adam, or SGD with ``momentum``.
    lr : float
        Learning rate.
    momentum : float, default 0.0
        SGD's momentum (ignored by Adam).
    weight_decay : float, default 0.0
        L2 weight decay.

    Examples
    --------
    >>> spec = OptimizerSpec("sgd", 0.02, momentum=0.7, weight_decay=1e-4)
    >>> optimizer = spec.build([torch.nn.Parameter(torch.ones(2))])
    >>> type(optimizer).__name__, optimizer.param_groups[0]["momentum"]
    ('SGD', 0.7)
    """

    kind: Literal["adam", "sgd"]
    lr: float
    momentum: float = 0.0
    weight_decay: float = 0.0

    def build(self, parameters: Iterable[torch.nn.Parameter]) -> torch.optim.Optimizer:
        """A fresh optimizer over ``parameters``."""
        if self.kind == "sgd":
            return torch.optim.SGD(parameters, lr=self.lr, momentum=self.momentum, weight_decay=self.weight_decay)
        return torch.optim.Adam(parameters, lr=self.lr, weight_decay=self.weight_decay)


def optimizer_to_arrays(optimizer: torch.optim.Optimizer, prefix: str = OPTIMIZER_PREFIX) -> dict[str, np.ndarray]:
    """Every per-parameter state tensor of ``optimizer`` as ``<prefix><index>.<name>``.

    Examples
    --------
    >>> p = torch.nn.Parameter(torch.ones(2)); opt = torch.optim.Adam([p])
    >>> p.sum().backward(); opt.step()
    >>> sorted(optimizer_to_arrays(opt))
    ['opt.0.exp_avg', 'opt.0.exp_avg_sq', 'opt.0.step']
    """
    return {
        f"{prefix}{index}.{name}": value.detach().cpu().numpy().copy()
        for index, entries in optimizer.state_dict()["state"].items()
        for name, value in entries.items()
    }


def load_optimizer_arrays(
    optimizer: torch.optim.Optimizer, arrays: Mapping[str, np.ndarray], prefix: str = OPTIMIZER_PREFIX
) -> None:
    """Restore the state written by :func:`optimizer_to_arrays` (no entry: a fresh optimizer)."""
    state: dict[int, dict[str, torch.Tensor]] = {}
    for key, value in arrays.items():
        if key.startswith(prefix):
            index, name = key[len(prefix) :].split(".", 1)
            state.setdefault(int(index), {})[name] = torch.from_numpy(np.array(value))
    optimizer.load_state_dict({"state": state, "param_groups": optimizer.state_dict()["param_groups"]})
