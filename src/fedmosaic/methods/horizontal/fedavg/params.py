"""FedAvg's and FedProx's parameters."""

from __future__ import annotations

from pydantic import Field

from fedmosaic.methods.base import MethodParams


class FedAvgParams(MethodParams):
    """FedAvg takes no parameters beyond the shared training ones."""


class FedProxParams(MethodParams):
    """FedProx parameters.

    Parameters
    ----------
    mu : float, default 0.01
        Weight of the proximal term ``mu / 2 * ||w - w_global||^2`` (> 0).
    """

    mu: float = Field(default=0.01, gt=0)
