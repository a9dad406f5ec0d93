"""SCAFFOLD's parameters."""

from __future__ import annotations

from pydantic import Field

from fedmosaic.limits import MAX_LR
from fedmosaic.methods.base import MethodParams


class ScaffoldParams(MethodParams):
    """SCAFFOLD parameters.

    Parameters
    ----------
    server_lr : float, default 1.0
        Global step size: the model moves this share of the way to the
        average of the replies (> 0).
    """

    server_lr: float = Field(default=1.0, gt=0, le=MAX_LR)
