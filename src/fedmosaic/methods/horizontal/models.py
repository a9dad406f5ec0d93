"""Classifier models built from a small, validated description."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from torch import nn

from fedmosaic.limits import MAX_LAYERS, Width


class ModelParams(BaseModel):
    """Describes a classifier.

    Parameters
    ----------
    kind : {"mlp", "cnn"}, default "mlp"
        ``mlp``: flatten, then fully connected layers with ReLU.
        ``cnn``: 3x3 convolutions with ReLU and 2x2 max-pooling, then a
        linear layer.
    hidden : list of int, default [200, 200]
        Hidden layer widths of the MLP.
    channels : list of int, default [32, 64]
        Output channels of each convolution block of the CNN.
    """

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    kind: Literal["mlp", "cnn"] = "mlp"
    hidden: list[Width] = Field(default_factory=lambda: [200, 200], max_length=MAX_LAYERS)
    channels: list[Width] = Field(default_factory=lambda: [32, 64], min_length=1, max_length=MAX_LAYERS)


def build_model(params: ModelParams, input_shape: tuple[int, ...], num_classes: int) -> nn.Sequential:
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
    if params.kind == "mlp":
        return _mlp(math.prod(input_shape), params.hidden, num_classes)
    return _cnn(input_shape, params.channels, num_classes)


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

    def __call__(self) -> nn.Sequential:
        """A fresh model of this architecture."""
        return build_model(self.params, self.input_shape, self.num_classes)

    def to_json(self) -> dict[str, Any]:
        """The architecture as JSON (a model card's ``architecture``)."""
        return {
            "model": self.params.model_dump(mode="json"),
            "input_shape": list(self.input_shape),
            "num_classes": self.num_classes,
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> Classifier:
        """The architecture :meth:`to_json` wrote."""
        return cls(ModelParams(**document["model"]), tuple(document["input_shape"]), int(document["num_classes"]))


def _mlp(inputs: int, hidden: list[int], outputs: int) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Flatten()]
    width = inputs
    for size in hidden:
        layers += [nn.Linear(width, size), nn.ReLU()]
        width = size
    layers.append(nn.Linear(width, outputs))
    return nn.Sequential(*layers)


def _cnn(input_shape: tuple[int, ...], channels: list[int], outputs: int) -> nn.Sequential:
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
