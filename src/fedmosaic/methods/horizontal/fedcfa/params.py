"""Parameters of FedCFA, and the rules and counts they choose from (validated without PyTorch)."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, PositiveInt, model_validator
from typing_extensions import override

from fedmosaic.errors import ConfigError
from fedmosaic.limits import BatchSize, Samples
from fedmosaic.methods.base import MethodParams

SelectionRule = Literal["signed-smallest", "signed-largest", "magnitude-smallest", "magnitude-largest"]
"""Which ``k`` factors a counterfactual sample replaces: the smallest or largest scores, signed or absolute.

``signed-smallest`` is the reference's positive rule (the factors whose
gradient argues hardest against the true class), ``signed-largest`` its
negative rule (those that argue hardest for it); ``magnitude-smallest`` picks
the factors the true-class logit is least sensitive to, ``magnitude-largest``
the most sensitive ones.
"""
SELECTION_RULES: tuple[str, ...] = get_args(SelectionRule)


def clip_k(k: int, num_factors: int) -> int:
    """``k`` clipped to ``num_factors // 2``, so that the smallest and largest ``k`` of a rule never overlap.

    Raises
    ------
    ValueError
        If there are fewer than 2 factors.

    Examples
    --------
    >>> clip_k(24, 64), clip_k(24, 10)
    (24, 5)
    """
    if num_factors < 2:
        raise ValueError(f"FedCFA needs at least 2 factors at the split, got {num_factors}")
    return min(k, num_factors // 2)


class FedCFAParams(MethodParams):
    """FedCFA parameters.

    Parameters
    ----------
    k_share : float, default 0.25
        Share of the factors replaced per sample in each counterfactual
        sample, in ``(0, 0.5]``: ``max(1, round(k_share * F))`` of ``F``
        factors (chosen on Simpson-MNIST's validation set; the reference
        replaces 24 of 64 channels, 0.375).
    k : int or None, default None
        Replace exactly this many factors instead (the reference's absolute
        ``k = 24``); clipped to half the number of factors.
    split : int or None, default None
        Where the model (an ``nn.Sequential``) is cut: the encoder is
        ``model[:split]``, the decoder ``model[split:]``. Unset: just after the
        first hidden layer's activation of an MLP, or just after the first
        convolution block of a CNN (as the reference cuts ResNet-18 after
        ``layer1``).
    positive_rule : {"signed-smallest", "signed-largest", "magnitude-smallest", "magnitude-largest"}, default "signed-smallest"
        Which factors the positive sample replaces: the ``k`` smallest or
        largest gradients of the true-class logit, signed or absolute
        (``signed-smallest`` is the reference's).
    negative_rule : {"signed-smallest", "signed-largest", "magnitude-smallest", "magnitude-largest"}, default "signed-largest"
        Which factors the negative sample replaces (``signed-largest`` is the
        reference's).
    chunk_size : int, default 128
        Samples per chunk whose mean a client uploads. Ignored when
        ``num_chunks`` is set.
    chunk_remainder : {"dropped", "kept"}, default "dropped"
        The samples left over after the full chunks of ``chunk_size``:
        dropped (unless they are the only chunk), or uploaded as one more,
        smaller chunk's mean, as the reference does.
    num_chunks : int or None, default None
        Cut each client's data into this many chunks (B) of nearly equal size
        instead (at most one per sample). Required by
        ``average_dataset = "fixed"``, where it is also the size of the
        global average dataset.
    average_dataset : {"cached", "previous", "fixed"}, default "cached"
        ``cached`` (the paper's global average dataset): the server keeps
        every client's latest chunk means, shuffles them, deals them into B
        groups of nearly equal size and broadcasts each group's unweighted
        mean; B is ``num_chunks`` if set, else the most chunk means one
        client uploaded. ``previous``: every chunk mean uploaded by the
        previous round's clients. ``fixed``: the previous round's chunk means
        grouped as ``cached`` does, into ``num_chunks`` means.
    fdc_weight : float, default 0.1
        Weight of the factor decorrelation loss (mean absolute Pearson
        correlation between pairs of factors over the batch); 0 disables it.
    fdc_variance_floor : float, default 1e-4
        Added to each factor's variance in the FDC loss (> 0), so that a
        nearly dead unit's correlations and their gradients stay bounded
        (the first versions used 1e-8).
    ce_weight : float, default 1.0
        Weight of the cross-entropy on the real samples.
    positive_weight : float, default 5.0
        Weight of the cross-entropy on the positive counterfactual samples.
    negative_weight : float, default 5.0
        Weight of the soft-label cross-entropy on the negative counterfactual
        samples.
    client_optimizer : {"per-round", "carried-sgd"}, default "per-round"
        ``per-round``: the ``[train]`` section's optimizer, built afresh each
        round. ``carried-sgd``: the reference's, one SGD per client with
        ``train.lr``, momentum 0.9 and weight decay 5e-4 (``train``'s
        optimizer, momentum and weight decay are not used), whose momentum
        buffers the client keeps in its state from one round it trains to
        the next (so they survive a checkpoint and travel in Flower's
        ``context.state``).

    Examples
    --------
    >>> params = FedCFAParams(k=8, fdc_weight=0.0)
    >>> params.positive_weight, params.average_dataset, params.replaced(64)
    (5.0, 'cached', 8)
    >>> FedCFAParams().replaced(64), FedCFAParams(k_share=0.375).replaced(64)
    (16, 24)
    """

    k_share: float = Field(default=0.25, gt=0, le=0.5)
    k: PositiveInt | None = None
    split: PositiveInt | None = None
    positive_rule: SelectionRule = "signed-smallest"
    negative_rule: SelectionRule = "signed-largest"
    chunk_size: BatchSize = 128
    chunk_remainder: Literal["dropped", "kept"] = "dropped"
    num_chunks: Samples | None = None
    average_dataset: Literal["cached", "previous", "fixed"] = "cached"
    fdc_weight: float = Field(default=0.1, ge=0)
    fdc_variance_floor: float = Field(default=1e-4, gt=0)
    ce_weight: float = Field(default=1.0, ge=0)
    positive_weight: float = Field(default=5.0, ge=0)
    negative_weight: float = Field(default=5.0, ge=0)
    client_optimizer: Literal["per-round", "carried-sgd"] = "per-round"

    @model_validator(mode="after")
    def _fixed_needs_num_chunks(self) -> FedCFAParams:
        if self.average_dataset == "fixed" and self.num_chunks is None:
            raise ValueError('average_dataset "fixed" needs num_chunks (the number B of global means)')
        return self

    @override
    def check_model(self, model: Any) -> None:
        """FedCFA cuts the classifier at ``split`` (else its default cut): an ``nn.Sequential`` it can be cut into two."""
        from torch import nn

        from fedmosaic.methods.horizontal.fedcfa.split import split_model

        if not isinstance(model, nn.Sequential):
            raise ConfigError(
                "method",
                f"FedCFA cuts the model into encoder and decoder: [model] must build an nn.Sequential, "
                f"got {type(model).__name__}",
            )
        try:
            split_model(model, self.split)
        except ValueError as error:
            raise ConfigError("params.split", str(error)) from None

    def replaced(self, num_factors: int) -> int:
        """Factors replaced per counterfactual sample among ``num_factors``: ``k``, or the share, at most half."""
        wanted = self.k if self.k is not None else max(1, round(self.k_share * num_factors))
        return clip_k(wanted, num_factors)


class FedCFAReferenceParams(FedCFAParams):
    """FedCFA as the public reference runs it (``hua-zi/FedCFA``): its loss and protocol by default.

    The same parameters as :class:`FedCFAParams`, with the reference's
    defaults: its loss (weights 1:5:5; the positive sample replaces the
    ``k = 24`` smallest signed gradients, the negative one the 24 largest,
    ``alg/fedcfa.py`` and ``alg/run.sh``), no factor decorrelation (the
    reference parses ``--lc`` and never uses it), the global average dataset
    made of the previous round's chunk means of 128 samples with the
    remainder kept, and the client's SGD (momentum 0.9, weight decay 5e-4)
    carried across rounds (``setup_optim`` in
    ``fedlab/contrib/algorithm/basic_client.py``). Its 1 local epoch at batch
    128 is a ``[train]`` setting (``fedcfa-reference`` preset).

    Examples
    --------
    >>> params = FedCFAReferenceParams()
    >>> params.replaced(64), params.fdc_weight, params.average_dataset, params.client_optimizer
    (24, 0.0, 'previous', 'carried-sgd')
    """

    k: PositiveInt | None = 24
    positive_rule: SelectionRule = "signed-smallest"
    negative_rule: SelectionRule = "signed-largest"
    ce_weight: float = Field(default=1.0, ge=0)
    positive_weight: float = Field(default=5.0, ge=0)
    negative_weight: float = Field(default=5.0, ge=0)
    fdc_weight: float = Field(default=0.0, ge=0)
    average_dataset: Literal["cached", "previous", "fixed"] = "previous"
    chunk_remainder: Literal["dropped", "kept"] = "kept"
    client_optimizer: Literal["per-round", "carried-sgd"] = "carried-sgd"
