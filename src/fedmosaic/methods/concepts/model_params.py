"""What describes a concept-based model (:class:`ConceptModelParams`): its family, decoder and widths."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from fedmosaic.limits import Width
from fedmosaic.methods.architectures import OwnModel

if TYPE_CHECKING:
    from torch import nn


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
    factory : str or None, default None
        Your own input encoder instead of the LeakyReLU MLP:
        ``"module:callable"`` (a module beside the experiment file, or
        installed) or ``"file.py:callable"``, called as
        ``callable(input_shape=..., output_dim=encoder_hidden, **args)``; it
        returns a ``torch.nn.Module`` mapping a batch of inputs to
        ``(batch, encoder_hidden)`` features, which feed the concept layers.
    args : table or None, default None
        Further keyword arguments of the factory.
    code_sha256 : str or None, default None
        Set when the configuration loads: the SHA-256 of the factory's
        module source, recorded with every run and model file.

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
    factory: str | None = Field(default=None, min_length=1)
    args: dict[str, Any] | None = None
    code_sha256: str | None = Field(default=None, min_length=64, max_length=64)

    def build_encoder(self, input_dim: int) -> nn.Module:
        """The input encoder: the factory's module, else ``input_dim -> encoder_hidden -> encoder_hidden``, LeakyReLU after each.

        Raises
        ------
        ConfigError
            Naming ``model.factory``: it cannot be imported or called, or maps a
            batch of inputs to another shape than ``(batch, encoder_hidden)``.
        """
        hidden = self.encoder_hidden
        if self.factory is None:
            from fedmosaic.methods.concepts.slots import leaky_mlp  # PyTorch's: loaded when a run builds

            return leaky_mlp([input_dim, hidden, hidden], activate_output=True)
        return OwnModel(factory=self.factory, args=self.args).build((input_dim,), hidden)
