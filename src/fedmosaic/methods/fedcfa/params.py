"""Parameters of FedCFA."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveInt, model_validator

from fedmosaic.methods.base import MethodParams


class FedCFAParams(MethodParams):
    """FedCFA parameters.

    Parameters
    ----------
    k : int, default 24
        Factors replaced per sample in each counterfactual sample (the
        reference replaces 24 of 64 channels). Clipped to half the number of
        factors where the encoder has fewer than ``2 * k``, so that the
        replaced low- and high-score factors never overlap.
    split : int or None, default None
        Where the model (an ``nn.Sequential``) is cut: the encoder is
        ``model[:split]``, the decoder ``model[split:]``. Unset: just after the
        first hidden layer's activation of an MLP, or just before the
        ``Flatten`` that follows the convolution blocks of a CNN.
    chunk_size : int, default 128
        Samples per chunk whose mean a client uploads; the last partial chunk
        is dropped unless it is the only one. Ignored when ``num_chunks`` is
        set.
    num_chunks : int or None, default None
        Cut each client's data into this many chunks (B) of nearly equal size
        instead (at most one per sample). Required by
        ``average_dataset = "fixed"``, where it is also the size of the
        global average dataset.
    average_dataset : {"previous", "fixed"}, default "previous"
        ``previous``: the global average dataset is every chunk mean uploaded
        by the previous round's clients. ``fixed``: the server shuffles those
        chunk means, deals them into ``num_chunks`` groups of nearly equal
        size and broadcasts each group's unweighted mean, so the broadcast
        never exceeds ``num_chunks`` means.
    fdc_weight : float, default 0.1
        Weight of the factor decorrelation loss (mean absolute Pearson
        correlation between pairs of factors over the batch); 0 disables it.
    ce_weight : float, default 1.0
        Weight of the cross-entropy on the real samples.
    positive_weight : float, default 5.0
        Weight of the cross-entropy on the positive counterfactual samples.
    negative_weight : float, default 5.0
        Weight of the soft-label cross-entropy on the negative counterfactual
        samples.

    Examples
    --------
    >>> params = FedCFAParams(k=8, fdc_weight=0.0)
    >>> params.positive_weight, params.average_dataset
    (5.0, 'previous')
    """

    k: PositiveInt = 24
    split: PositiveInt | None = None
    chunk_size: PositiveInt = 128
    num_chunks: PositiveInt | None = None
    average_dataset: Literal["previous", "fixed"] = "previous"
    fdc_weight: float = Field(default=0.1, ge=0)
    ce_weight: float = Field(default=1.0, ge=0)
    positive_weight: float = Field(default=5.0, ge=0)
    negative_weight: float = Field(default=5.0, ge=0)

    @model_validator(mode="after")
    def _fixed_needs_num_chunks(self) -> FedCFAParams:
        if self.average_dataset == "fixed" and self.num_chunks is None:
            raise ValueError('average_dataset "fixed" needs num_chunks (the number B of global means)')
        return self
