"""FedMix's and NaiveMix's parameters."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fedmosaic.limits import BatchSize
from fedmosaic.methods.base import MethodParams

Variant = Literal["fedmix", "naivemix"]


class FedMixParams(MethodParams):
    """FedMix parameters (and NaiveMix's, with ``variant = "naivemix"``).

    Parameters
    ----------
    variant : {"fedmix", "naivemix"}, default "fedmix"
        ``fedmix``: the first-order approximation of global mixup (double
        backward); ``naivemix``: plain mixup of each sample with a global mean.
    lam : float, default 0.05
        Mixing weight lambda, in (0, 1). The paper uses 0.05 for FedMix and
        0.1 for NaiveMix on CIFAR10, 0.2 on FEMNIST.
    mean_batch : int or None, default None
        Samples per shared mean (M in the paper): a client shares one mean
        per group of at least this many shuffled samples. Unset: one mean of
        the client's whole dataset, as in the paper.

    Examples
    --------
    >>> FedMixParams().variant, FedMixParams().lam
    ('fedmix', 0.05)
    """

    variant: Variant = "fedmix"
    lam: float = Field(default=0.05, gt=0, lt=1)
    mean_batch: BatchSize | None = None


class NaiveMixParams(FedMixParams):
    """NaiveMix parameters: FedMix's, with NaiveMix's defaults.

    Parameters
    ----------
    variant : {"fedmix", "naivemix"}, default "naivemix"
        ``naivemix``: plain mixup of each sample with a global mean;
        ``fedmix``: the first-order approximation of global mixup.
    lam : float, default 0.1
        Mixing weight lambda, in (0, 1); the paper's NaiveMix value on CIFAR10.
    mean_batch : int or None, default None
        Samples per shared mean (M in the paper): a client shares one mean
        per group of at least this many shuffled samples. Unset: one mean of
        the client's whole dataset, as in the paper.

    Examples
    --------
    >>> NaiveMixParams().variant, NaiveMixParams().lam
    ('naivemix', 0.1)
    """

    variant: Variant = "naivemix"
    lam: float = Field(default=0.1, gt=0, lt=1)
