"""FedHSSL's parameters."""

from __future__ import annotations

from pydantic import Field, field_validator

from fedmosaic.limits import Epochs, Rounds
from fedmosaic.methods.architectures import OwnModel
from fedmosaic.methods.vertical.split.params import SplitVFLParams


class FedHSSLParams(SplitVFLParams):
    """FedHSSL's parameters.

    Parameters
    ----------
    pretrain_rounds : int, default 20
        Rounds (epochs) of self-supervised pre-training (cross-party and local
        SimSiam, then the average of the top layers); the federation's
        remaining rounds fine-tune the split network (Vanilla VFL); must be
        fewer than ``federation.rounds``.
    passes : int, default 2
        Epochs over the fully aligned labeled rows per fine-tuning round; 2
        gives 20 fine-tuning rounds the 40 epochs Vanilla VFL has in 40 rounds.
    noise_std : float, default 0.1
        Standard deviation of the Gaussian noise of the local augmentations.
    mask_rate : float, default 0.2
        Probability that the local augmentations zero a feature of a row.
    pull : float, default 1.0
        Weight of the local step's pull toward the cross-party representations (0: none).
    model : None
        Not taken: FedHSSL pre-trains the split network's MLP encoders by
        SimSiam, so an own encoder is refused.
    """

    pretrain_rounds: Rounds = 20
    passes: Epochs = 2
    noise_std: float = Field(default=0.1, ge=0)
    mask_rate: float = Field(default=0.2, ge=0, lt=1)
    pull: float = Field(default=1.0, ge=0)

    @field_validator("model")
    @classmethod
    def _no_own_encoder(cls, value: OwnModel | None) -> None:
        if value is not None:
            raise ValueError("an own encoder is not supported: FedHSSL pre-trains its MLP encoders by SimSiam")
