"""What describes a concept-based model (:class:`ConceptModelParams`): its family, decoder and widths."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from fedmosaic.limits import Width


class ConceptModelParams(BaseModel):
    """Describes a concept-based model.

    Parameters
    ----------
    family : {"cbm", "cem", "cgm", "c2bm"}, default "cbm"
        ``cbm``: concept bottleneck; ``cem``: concept embeddings; ``cgm``:
        concept graph over embeddings; ``c2bm``: causal concept bottleneck
        (input-dependent linear equations over the parents' probabilities).
    decoder : {"linear", "mlp"}, default "mlp"
        Task decoder of ``cbm`` and ``cem``: one linear layer, or linear,
        LeakyReLU, linear.
    encoder_hidden : int, default 64
        Width of both layers of the LeakyReLU MLP encoder.
    embedding_size : int, default 8
        Size of each value embedding (``cem`` and ``cgm``; ``cbm`` and
        ``c2bm`` pass probabilities and have no embeddings).
    decoder_hidden : int, default 32
        Hidden width of the MLP task decoder and of the C2BM weight
        generators; fixed for a model's life so that growth never reshapes
        existing hidden layers.
    init : {"zero", "orthogonal"}, default "zero"
        Initialisation of the weights of connections created by growth.
        ``zero`` leaves the outputs for the old inputs unchanged.

    Examples
    --------
    >>> ConceptModelParams(family="cem", embedding_size=4).decoder
    'mlp'
    """

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    family: Literal["cbm", "cem", "cgm", "c2bm"] = "cbm"
    decoder: Literal["linear", "mlp"] = "mlp"
    encoder_hidden: Width = 64
    embedding_size: Width = 8
    decoder_hidden: Width = 32
    init: Literal["zero", "orthogonal"] = "zero"
