"""What describes a concept-based model (:class:`ConceptModelParams`): its family, decoder and widths."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fedmosaic.errors import ConfigError
from fedmosaic.limits import MAX_LAYERS, Width
from fedmosaic.methods.architectures import MODELS, OwnModel

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
    backbone : str or None, default None
        A registered architecture as the input encoder instead of the
        LeakyReLU MLP: ``cnn`` (3x3 convolutions with ReLU and 2x2
        max-pooling, ``args.channels`` of them, default [32, 64]),
        ``resnet18`` (the CIFAR variant) or a plugin's, built as a classifier
        of ``encoder_hidden`` outputs over inputs of ``input_shape`` (with
        ``args``), a LeakyReLU after it. Exclusive with ``factory``.
    input_shape : list of int or None, default None
        The shape of one example, ``x``'s rows being such examples flattened
        (images: ``[channels, height, width]``); the encoder (``backbone`` or
        ``factory``) receives them in this shape. Its product must be the
        width of ``x``. None: one example is a row of ``x``.
    factory : str or None, default None
        Your own input encoder instead of the LeakyReLU MLP:
        ``"module:callable"`` (a module beside the experiment file, or
        installed) or ``"file.py:callable"``, called as
        ``callable(input_shape=..., output_dim=encoder_hidden, **args)``; it
        returns a ``torch.nn.Module`` mapping a batch of inputs to
        ``(batch, encoder_hidden)`` features, which feed the concept layers.
    args : table or None, default None
        Further keyword arguments of the factory or the backbone.
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
    backbone: str | None = Field(default=None, min_length=1)
    input_shape: list[Width] | None = Field(default=None, min_length=1, max_length=MAX_LAYERS)
    factory: str | None = Field(default=None, min_length=1)
    args: dict[str, Any] | None = None
    code_sha256: str | None = Field(default=None, min_length=64, max_length=64)

    @model_validator(mode="after")
    def _one_encoder(self) -> ConceptModelParams:
        if self.backbone is not None and self.factory is not None:
            raise ValueError("backbone and factory are exclusive: name a registered architecture or your own encoder")
        return self

    def build_encoder(self, input_dim: int) -> nn.Module:
        """The input encoder: the backbone's or the factory's module, else the LeakyReLU MLP.

        The MLP is ``input_dim -> encoder_hidden -> encoder_hidden``, a LeakyReLU
        after each layer. With ``input_shape``, a backbone or a factory is
        preceded by an ``nn.Unflatten`` of the rows to that shape.

        Raises
        ------
        ConfigError
            Naming ``model.input_shape``, if it does not hold ``input_dim``
            values; ``model.backbone``, if it is not registered or cannot be
            built for the inputs; ``model.factory``, if it cannot be imported
            or called, or maps a batch of inputs to another shape than
            ``(batch, encoder_hidden)``.

        Examples
        --------
        >>> encoder = ConceptModelParams(backbone="cnn", input_shape=[3, 8, 8], args={"channels": [4]}).build_encoder(192)
        >>> import torch
        >>> tuple(encoder(torch.zeros(5, 192)).shape)
        (5, 64)
        """
        hidden = self.encoder_hidden
        if self.factory is None and self.backbone is None:
            from fedmosaic.methods.concepts.slots import leaky_mlp  # PyTorch's: loaded when a run builds

            return leaky_mlp([input_dim, hidden, hidden], activate_output=True)
        from torch import nn

        shape = (input_dim,) if self.input_shape is None else tuple(self.input_shape)
        if math.prod(shape) != input_dim:
            raise ConfigError(
                "model.input_shape", f"{list(shape)} holds {math.prod(shape)} values, the inputs have {input_dim}"
            )
        if self.backbone is not None:
            encoder = self._backbone(shape)
        else:
            encoder = OwnModel(factory=str(self.factory), args=self.args).build(shape, hidden)
        return encoder if self.input_shape is None else nn.Sequential(nn.Unflatten(1, shape), encoder)

    def _backbone(self, shape: tuple[int, ...]) -> nn.Module:
        """The registered architecture ``backbone`` with ``encoder_hidden`` outputs on inputs of ``shape``, a LeakyReLU after it."""
        import torch
        from torch import nn

        architecture = MODELS.get(str(self.backbone), field="model.backbone")
        with torch.no_grad(), torch.random.fork_rng():
            try:
                module = architecture.build(input_shape=shape, num_classes=self.encoder_hidden, **(self.args or {}))
                output = tuple(module(torch.zeros(2, *shape)).shape)
            except Exception as error:  # noqa: BLE001 - a plugin's architecture: whatever it raises is one line
                detail = str(error).splitlines()[0] if str(error) else ""
                raise ConfigError(
                    "model.backbone",
                    f"{self.backbone} cannot be built for inputs of shape {shape}: {type(error).__name__}: {detail}",
                ) from None
        if output != (2, self.encoder_hidden):
            raise ConfigError(
                "model.backbone",
                f"{self.backbone} must output (batch, {self.encoder_hidden}), got {output} for a batch of 2",
            )
        return nn.Sequential(module, nn.LeakyReLU())
