"""The split-network baselines' parameters: Local and Vanilla VFL, PlugVFL, LASER-VFL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import Field
from typing_extensions import override

from fedmosaic.limits import MAX_LAYERS, Epochs, Width
from fedmosaic.methods.architectures import OwnModel
from fedmosaic.methods.vertical.params import VerticalParams

if TYPE_CHECKING:
    from fedmosaic.methods.vertical.optimizer_state import OptimizerSpec


class SplitVFLParams(VerticalParams):
    """The split-network baselines' parameters.

    Parameters
    ----------
    embedding : int, default 32
        Width of each party's embedding.
    layers : int, default 1
        Hidden layers of every encoder, and of the heads unless
        ``head_layers`` is set (LASER-VFL's reference: 2 hidden layers of 128
        units, embeddings of 128 and linear heads).
    head_layers : int or None, default None
        Hidden layers of the active party's heads (0: linear, as LASER-VFL's
        reference); None: ``layers``.
    passes : int, default 1
        Epochs over the training rows per round (FedHSSL: per fine-tuning
        round) under the tuned protocol; the paper protocol
        (``vertical.protocol = "paper"``) makes one per round.
    epochs : int or None, default None
        A fixed budget under both protocols: this many epochs in all, spread
        evenly over the rounds the baseline trains (replaces ``passes``).
    test_round : {"best", "last"}, default "best"
        Test the round of the best validation accuracy (when there is a
        validation split), or the last round (a reference configuration's
        fixed budget; no validation).
    optimizer : {"adam", "sgd"}, default "adam"
        Every party's optimizer of the split networks (FedHSSL: of pre-training and fine-tuning).
    momentum : float, default 0.0
        SGD's momentum (``optimizer = "sgd"`` only).
    weight_decay : float, default 0.0
        L2 weight decay of the optimizer.
    model : table or None, default None
        Every party's own encoder instead of the MLP: ``{factory =
        "module:callable", args = {...}}``, called as ``callable(input_shape=
        shape, output_dim=embedding, party=k, **args)`` for party ``k`` (0 is
        the active party) whose examples have ``shape`` (an image patch's
        ``(1, rows, cols)``, or ``(columns,)``); it returns a
        ``torch.nn.Module`` of ``(batch, embedding)`` embeddings. The heads
        stay the baseline's.
    """

    embedding: Width = 32
    layers: int = Field(default=1, ge=1, le=MAX_LAYERS)
    head_layers: int | None = Field(default=None, ge=0, le=MAX_LAYERS)
    passes: Epochs = 1
    epochs: Epochs | None = None
    test_round: Literal["best", "last"] = "best"
    optimizer: Literal["adam", "sgd"] = "adam"
    momentum: float = Field(default=0.0, ge=0, lt=1)
    weight_decay: float = Field(default=0.0, ge=0, le=1)
    model: OwnModel | None = None

    @property
    def head_depth(self) -> int:
        """Hidden layers of the heads: ``head_layers``, else ``layers``."""
        return self.layers if self.head_layers is None else self.head_layers

    @override
    def check_own_model(self, shapes: Sequence[tuple[int, ...]], num_classes: int) -> None:
        """Build every party's own encoder (``model.factory``), if any, on examples of its ``shapes[k]``."""
        if self.model is not None:
            for party, shape in enumerate(shapes):
                self.model.build(shape, self.embedding, party=party)

    def optimizer_spec(self) -> OptimizerSpec:
        """Every party's optimizer of the split networks."""
        from fedmosaic.methods.vertical.optimizer_state import OptimizerSpec  # PyTorch's: loaded by a run only

        return OptimizerSpec(self.optimizer, self.lr, self.momentum, self.weight_decay)


class PlugVFLParams(SplitVFLParams):
    """PlugVFL's parameters.

    Parameters
    ----------
    dropout : float, default 0.5
        Probability that a passive party's embedding is replaced by zeros in
        a training row, under the tuned protocol (the paper protocol, as the
        LASER-VFL reference code, drops none).
    """

    dropout: float = Field(default=0.5, ge=0, lt=1)


class LaserVFLParams(SplitVFLParams):
    """LASER-VFL's parameters.

    Parameters
    ----------
    masks : {"batch", "row"}, default "batch"
        Draw the party subsets of a step with one random ranking of the
        parties per batch (as the reference code: rows with the same present
        parties share their subsets), or one per row.
    """

    masks: Literal["batch", "row"] = "batch"
