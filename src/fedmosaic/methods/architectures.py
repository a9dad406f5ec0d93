"""Model architectures by name: fedmosaic's own and installed plugins', through one registry.

A :class:`ModelArchitecture` builds a classifier for a task: it is called
with the shape of one example and the number of classes, and the keyword
arguments the experiment gives (``[model]``). fedmosaic's own (``mlp``,
``cnn``) are registered through its ``fedmosaic.models`` entry point, as a
plugin's are; ``[model] kind`` names one, ``[model] factory`` names a
user's own callable of the same signature instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import nn

from fedmosaic.registry import Registry


@dataclass(frozen=True)
class ModelArchitecture:
    """A registered model architecture.

    Parameters
    ----------
    name : str
        Name used as ``[model] kind``.
    summary : str
        One line for listings.
    build : callable (input_shape, num_classes, **arguments) -> torch.nn.Module
        Builds a fresh model whose output is ``(batch, num_classes)`` logits.
    keys : tuple of str, default ()
        ``[model]`` keys passed to ``build`` as keyword arguments (the
        built-ins' ``hidden`` and ``channels``); ``[model] args`` adds others.
    """

    name: str
    summary: str
    build: Callable[..., nn.Module]
    keys: tuple[str, ...] = ()


MODELS: Registry[ModelArchitecture] = Registry(
    "model", "fedmosaic.models", ModelArchitecture, builtin="fedmosaic.methods.horizontal.models:BUILTIN_MODELS"
)
"""Every registered architecture, by name: fedmosaic's first, then each plugin's."""
