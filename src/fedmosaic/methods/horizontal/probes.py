"""Probes: further measurements of the global model, taken with every evaluation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import nn

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.methods.arrays import to_tensor
from fedmosaic.methods.training import evaluate_classifier

Probe = Callable[[nn.Module], dict[str, float]]
"""Measures a model (in eval mode, parameters loaded) and names each number."""


@dataclass(frozen=True, eq=False)
class ColourSwapProbe:
    """Colour reliance: accuracy on digits at their own class's shade minus at the other class's.

    Parameters
    ----------
    own : ArrayDataset
        Test digits at a shade of their own class.
    swapped : ArrayDataset
        The same digits, row for row, at a shade of the other class.

    Examples
    --------
    >>> import numpy as np, torch
    >>> own = ArrayDataset(np.array([[0.0], [1.0]], np.float32), np.array([0, 1]), num_classes=2)
    >>> swapped = ArrayDataset(np.array([[1.0], [0.0]], np.float32), np.array([0, 1]), num_classes=2)
    >>> model = torch.nn.Linear(1, 2)
    >>> with torch.no_grad():
    ...     _ = model.weight.copy_(torch.tensor([[-1.0], [1.0]])); _ = model.bias.zero_()
    >>> ColourSwapProbe(own, swapped)(model)["colour_reliance"]
    1.0
    """

    own: ArrayDataset
    swapped: ArrayDataset

    def __call__(self, model: nn.Module) -> dict[str, float]:
        """``own_shade_accuracy``, ``swapped_shade_accuracy`` and their difference ``colour_reliance``."""
        own = evaluate_classifier(model, to_tensor(self.own.x), to_tensor(self.own.y))["accuracy"]
        swapped = evaluate_classifier(model, to_tensor(self.swapped.x), to_tensor(self.swapped.y))["accuracy"]
        return {"own_shade_accuracy": own, "swapped_shade_accuracy": swapped, "colour_reliance": own - swapped}


@dataclass(frozen=True, eq=False)
class HeldOutProbe:
    """Accuracy and colour reliance on a second held-out set, each name prefixed.

    Lets one run choose on one set (e.g. ``validation_accuracy``) and report
    on the set it is evaluated on.

    Parameters
    ----------
    prefix : str
        Put before every name, e.g. ``"validation_"``.
    data : ArrayDataset
        The held-out samples.
    swap : ColourSwapProbe
        Their colour-swap pairs.

    Examples
    --------
    >>> import numpy as np, torch
    >>> data = ArrayDataset(np.array([[0.0], [1.0]], np.float32), np.array([0, 1]), num_classes=2)
    >>> swapped = ArrayDataset(np.array([[1.0], [0.0]], np.float32), np.array([0, 1]), num_classes=2)
    >>> model = torch.nn.Linear(1, 2)
    >>> with torch.no_grad():
    ...     _ = model.weight.copy_(torch.tensor([[-1.0], [1.0]])); _ = model.bias.zero_()
    >>> metrics = HeldOutProbe("validation_", data, ColourSwapProbe(data, swapped))(model)
    >>> metrics["validation_accuracy"], metrics["validation_colour_reliance"]
    (1.0, 1.0)
    """

    prefix: str
    data: ArrayDataset
    swap: ColourSwapProbe

    def __call__(self, model: nn.Module) -> dict[str, float]:
        """``<prefix>accuracy`` and the colour-swap numbers of :class:`ColourSwapProbe`, prefixed."""
        accuracy = evaluate_classifier(model, to_tensor(self.data.x), to_tensor(self.data.y))["accuracy"]
        metrics = {"accuracy": accuracy, **self.swap(model)}
        return {f"{self.prefix}{name}": value for name, value in metrics.items()}
