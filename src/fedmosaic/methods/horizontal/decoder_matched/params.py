"""The parameters of FedAvg with a matched decoder step."""

from __future__ import annotations

from pydantic import Field, PositiveInt

from fedmosaic.methods.base import MethodParams


class DecoderMatchedParams(MethodParams):
    """Parameters of FedAvg with a matched decoder step.

    Parameters
    ----------
    decoder_scale : float, default 11.0
        Factor on the decoder's gradient (its effective learning rate):
        FedCFA's ``ce_weight + positive_weight + negative_weight`` with the
        reference weights 1 + 5 + 5 (> 0).
    split : int or None, default None
        Where the decoder starts, as FedCFA's ``split`` (unset: FedCFA's
        default cut).
    """

    decoder_scale: float = Field(default=11.0, gt=0)
    split: PositiveInt | None = None
