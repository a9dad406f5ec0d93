"""Classifier models built from a small, validated description: a registered architecture or a user's factory."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from fedmosaic.deferred import Deferred
from fedmosaic.errors import ConfigError
from fedmosaic.limits import MAX_LAYERS, Width
from fedmosaic.methods.architectures import MODELS, ModelArchitecture
from fedmosaic.user_code import check_accepts, load_callable

if TYPE_CHECKING:
    from torch import nn


class ModelParams(BaseModel):
    """Describes a classifier.

    Parameters
    ----------
    kind : str, default "mlp"
        A registered architecture (``fedmosaic presets`` lists them).
        ``mlp``: flatten, then fully connected layers with ReLU.
        ``cnn``: 3x3 convolutions with ReLU and 2x2 max-pooling, then a
        linear layer.
    hidden : list of int, default [200, 200]
        Hidden layer widths of the MLP.
    channels : list of int, default [32, 64]
        Output channels of each convolution block of the CNN.
    factory : str or None, default None
        Your own model instead of ``kind``: ``"module:callable"`` (a module
        beside the experiment file, or installed) or ``"file.py:callable"``.
        It is called as ``callable(input_shape=..., num_classes=..., **args)``
        and returns a ``torch.nn.Module`` whose output is ``(batch,
        num_classes)`` logits. FedCFA cuts it into encoder and decoder, so
        for FedCFA it is an ``nn.Sequential`` (``runs.N.params.split`` says
        where the encoder ends).
    args : table or None, default None
        Further keyword arguments of the factory, or of a registered
        architecture.
    code_sha256 : str or None, default None
        Set when the configuration loads: the SHA-256 of the factory's
        module source, recorded with every run. Given (a recorded
        configuration), it must match the source found.
    """

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    kind: str = "mlp"
    hidden: list[Width] = Field(default_factory=lambda: [200, 200], max_length=MAX_LAYERS)
    channels: list[Width] = Field(default_factory=lambda: [32, 64], min_length=1, max_length=MAX_LAYERS)
    factory: str | None = Field(default=None, min_length=1)
    args: dict[str, Any] | None = None
    code_sha256: str | None = Field(default=None, min_length=64, max_length=64)

    @property
    def field(self) -> str:
        """The key that names the model: ``model.factory`` or ``model.kind``."""
        return "model.factory" if self.factory is not None else "model.kind"

    def builder(self) -> tuple[Callable[..., nn.Module], dict[str, Any]]:
        """The callable that builds the model, and its keyword arguments besides the shape and classes.

        Raises
        ------
        ConfigError
            If the architecture is not registered, or the factory cannot be imported.
        """
        if self.factory is not None:
            return load_callable(self.factory, "model.factory"), dict(self.args or {})
        architecture = MODELS.get(self.kind, field="model.kind")
        return architecture.build, {key: getattr(self, key) for key in architecture.keys} | (self.args or {})


def build_model(params: ModelParams, input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """Build the classifier described by ``params``.

    Parameters
    ----------
    params : ModelParams
        Architecture.
    input_shape : tuple of int
        Shape of one example, e.g. ``(1, 28, 28)`` or ``(617,)``.
    num_classes : int
        Number of output logits.

    Examples
    --------
    >>> model = build_model(ModelParams(hidden=[16]), (1, 8, 8), 10)
    >>> sum(p.numel() for p in model.parameters())
    1210
    """
    build, arguments = params.builder()
    return build(input_shape=tuple(input_shape), num_classes=num_classes, **arguments)


@dataclass(frozen=True)
class Classifier:
    """A classifier's architecture; calling it builds a fresh model (a model factory).

    Parameters
    ----------
    params : ModelParams
        Architecture.
    input_shape : tuple of int
        Shape of one example.
    num_classes : int
        Number of output logits.

    Examples
    --------
    >>> spec = Classifier(ModelParams(hidden=[16]), (1, 8, 8), 10)
    >>> Classifier.from_json(spec.to_json()) == spec, type(spec()).__name__
    (True, 'Sequential')
    """

    params: ModelParams
    input_shape: tuple[int, ...]
    num_classes: int

    def __call__(self) -> nn.Module:
        """A fresh model of this architecture."""
        return build_model(self.params, self.input_shape, self.num_classes)

    def to_json(self) -> dict[str, Any]:
        """The architecture as JSON (a model card's ``architecture``)."""
        kept = {"factory", "args", "code_sha256"} if self.params.factory is not None else None
        return {
            "model": self.params.model_dump(mode="json", exclude_none=True, include=kept),
            "input_shape": list(self.input_shape),
            "num_classes": self.num_classes,
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> Classifier:
        """The architecture :meth:`to_json` wrote."""
        return cls(ModelParams(**document["model"]), tuple(document["input_shape"]), int(document["num_classes"]))


def mlp(input_shape: tuple[int, ...], num_classes: int, hidden: list[int]) -> nn.Sequential:
    """Flatten, then fully connected layers of widths ``hidden`` with ReLU, then ``num_classes`` logits."""
    from torch import nn

    layers: list[nn.Module] = [nn.Flatten()]
    width, outputs = math.prod(input_shape), num_classes
    for size in hidden:
        layers += [nn.Linear(width, size), nn.ReLU()]
        width = size
    layers.append(nn.Linear(width, outputs))
    return nn.Sequential(*layers)


def cnn(input_shape: tuple[int, ...], num_classes: int, channels: Sequence[int] = (32, 64)) -> nn.Sequential:
    """3x3 convolution blocks of ``channels`` with ReLU and 2x2 max-pooling, then a linear layer to the logits."""
    from torch import nn

    outputs = num_classes
    if len(input_shape) != 3:
        raise ValueError(f"model.kind 'cnn' needs image inputs (C, H, W), got shape {input_shape}")
    depth, height, width = input_shape
    layers: list[nn.Module] = []
    for size in channels:
        layers += [nn.Conv2d(depth, size, kernel_size=3, padding=1), nn.ReLU()]
        if min(height, width) >= 2:
            layers.append(nn.MaxPool2d(2))
            height, width = height // 2, width // 2
        depth = size
    layers += [nn.Flatten(), nn.Linear(depth * height * width, outputs)]
    return nn.Sequential(*layers)


BUILTIN_MODELS: tuple[ModelArchitecture, ...] = (
    ModelArchitecture("mlp", "Fully connected layers with ReLU (model.hidden)", mlp, keys=("hidden",)),
    ModelArchitecture(
        "cnn",
        "3x3 convolutions with ReLU and 2x2 max-pooling, then a linear layer (model.channels)",
        cnn,
        ("channels",),
    ),
    ModelArchitecture(
        "resnet18",
        "ResNet-18, CIFAR variant (3x3 stem, no max-pooling); FedCFA cuts it after layer1",
        Deferred("fedmosaic.methods.horizontal.resnet:resnet18"),
    ),
)
"""fedmosaic's own architectures, registered through its ``fedmosaic.models`` entry point."""


def check_signature(params: ModelParams) -> None:
    """Refuse a model whose builder cannot take a shape, a number of classes and ``args``.

    Raises
    ------
    ConfigError
        Naming ``model.factory`` (or ``model.kind``), if it cannot be imported or called so.
    """
    build, arguments = params.builder()
    inputs = {"input_shape": (1,), "num_classes": 2}
    check_accepts(build, params.factory or params.kind, params.field, inputs, arguments, all_inputs=True)


def check_classifier(params: ModelParams, input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """Build the model once and refuse it unless it maps a batch of ``input_shape`` to ``num_classes`` logits.

    The global random state is left as it was, so runs draw what they drew without the check.

    Returns
    -------
    torch.nn.Module
        The model built (for the runs' methods to check theirs against).

    Raises
    ------
    ConfigError
        Naming ``model.factory`` (or ``model.kind``): what the builder raised, a
        result that is not a module with parameters, or an output of another shape.

    Examples
    --------
    >>> type(check_classifier(ModelParams(hidden=[4]), (3,), 2)).__name__
    'Sequential'
    >>> check_classifier(ModelParams(kind="cnn"), (3,), 2)
    Traceback (most recent call last):
    ...
    fedmosaic.errors.ConfigError: model.kind: cnn cannot be built for inputs of shape (3,) and 2 classes: ValueError: model.kind 'cnn' needs image inputs (C, H, W), got shape (3,)
    """
    import torch
    from torch import nn

    named = params.factory or params.kind
    with torch.random.fork_rng(), torch.no_grad():
        try:
            model = build_model(params, input_shape, num_classes)
        except ConfigError:
            raise
        except Exception as error:  # noqa: BLE001 - the user's code: whatever it raises is reported on one line
            raise ConfigError(params.field, _failed(named, "be built", input_shape, num_classes, error)) from None
        if not isinstance(model, nn.Module) or not any(True for _ in model.parameters()):
            raise ConfigError(params.field, f"{named} must return a torch.nn.Module with parameters, got {model!r:.80}")
        model.eval()
        try:
            output = model(torch.zeros((2, *input_shape)))
        except Exception as error:  # noqa: BLE001 - as above
            raise ConfigError(params.field, _failed(named, "run", input_shape, num_classes, error)) from None
    shape = tuple(output.shape) if isinstance(output, torch.Tensor) else type(output).__name__
    if shape != (2, num_classes):
        raise ConfigError(
            params.field,
            f"{named} must output (batch, {num_classes}) logits for inputs of shape {input_shape}, "
            f"got {shape} for a batch of 2",
        )
    return model


def _failed(named: str, what: str, input_shape: tuple[int, ...], num_classes: int, error: Exception) -> str:
    detail = str(error).splitlines()[0] if str(error) else ""
    return f"{named} cannot {what} for inputs of shape {input_shape} and {num_classes} classes: {type(error).__name__}: {detail}"
