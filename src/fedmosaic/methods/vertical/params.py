"""What the parameters of every vertical method share."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from fedmosaic.limits import MAX_LR, BatchSize, Rounds, Width
from fedmosaic.methods.base import MethodParams

if TYPE_CHECKING:
    from fedmosaic.methods.vertical.optimizer_state import OptimizerSpec


class VerticalParams(MethodParams):
    """What every vertical method shares.

    Parameters
    ----------
    hidden : int, default 64
        Hidden units of every MLP.
    batch_size : int, default 128
        Rows per training step (one step is one or two exchanges with the parties).
    lr : float, default 0.001
        Adam learning rate of every party.
    patience : int or None, default None
        Stop training after this many validated rounds without a better
        validation accuracy (the round selected on validation is tested
        either way); None trains every round.
    """

    hidden: Width = 64
    batch_size: BatchSize = 128
    lr: float = Field(default=1e-3, gt=0, le=MAX_LR)
    patience: Rounds | None = None

    def optimizer_spec(self) -> OptimizerSpec:
        """Every party's optimizer: Adam with ``lr``."""
        from fedmosaic.methods.vertical.optimizer_state import OptimizerSpec  # PyTorch's: loaded by a run only

        return OptimizerSpec("adam", self.lr)
