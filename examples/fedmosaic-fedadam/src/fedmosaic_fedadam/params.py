"""FedAdam's parameters, validated when the experiment loads (``runs.N.params``)."""

from __future__ import annotations

from fedmosaic.limits import MAX_LR
from fedmosaic.plugin import MethodParams
from pydantic import Field


class FedAdamParams(MethodParams):
    """FedAdam parameters: the server optimiser's (the clients train as in FedAvg, with ``[train]``).

    Parameters
    ----------
    server_lr : float, default 0.01
        ``eta``, the server's step size (> 0).
    beta1 : float, default 0.9
        Decay of the first moment, the running mean of the pseudo-gradient, in [0, 1).
    beta2 : float, default 0.99
        Decay of the second moment, the running mean of its square, in [0, 1).
    tau : float, default 0.001
        ``tau``, added to the root of the second moment: the degree of
        adaptivity (small: a per-coordinate step close to ``server_lr``;
        large: close to ``server_lr / tau`` times the first moment) (> 0).

    Examples
    --------
    >>> FedAdamParams(server_lr=0.03).beta2
    0.99
    >>> FedAdamParams(beta1=1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pydantic_core._pydantic_core.ValidationError: 1 validation error for FedAdamParams
    beta1
      Input should be less than 1 ...
    """

    server_lr: float = Field(default=0.01, gt=0, le=MAX_LR)
    beta1: float = Field(default=0.9, ge=0, lt=1)
    beta2: float = Field(default=0.99, ge=0, lt=1)
    tau: float = Field(default=1e-3, gt=0)
