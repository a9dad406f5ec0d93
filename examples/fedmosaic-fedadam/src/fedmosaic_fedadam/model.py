"""The ``tiny-convnet`` architecture: two 3x3 convolutions and a linear layer, for small images."""

from __future__ import annotations

from fedmosaic.plugin import ModelArchitecture
from torch import nn


def tiny_convnet(input_shape: tuple[int, ...], num_classes: int, width: int = 8) -> nn.Sequential:
    """Two 3x3 convolutions of ``width`` channels with ReLU (2x2 max-pooling between them), then the logits.

    Parameters
    ----------
    input_shape : tuple of int
        Shape of one example, ``(channels, height, width)``.
    num_classes : int
        Number of output logits.
    width : int, default 8
        Channels of both convolutions (``[model] args = { width = 16 }``).

    Returns
    -------
    torch.nn.Sequential
        Maps a batch ``(n, *input_shape)`` to ``(n, num_classes)`` logits.

    Raises
    ------
    ValueError
        If ``input_shape`` is not an image's or ``width`` is not a positive integer.

    Examples
    --------
    >>> import torch
    >>> tiny_convnet((1, 8, 8), 4)(torch.zeros(2, 1, 8, 8)).shape
    torch.Size([2, 4])
    """
    if len(input_shape) != 3:
        raise ValueError(f"model.kind 'tiny-convnet' needs image inputs (C, H, W), got shape {input_shape}")
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise ValueError(f"model.args.width must be a positive integer, got {width!r}")
    channels, height, breadth = input_shape
    pooling: nn.Module = nn.Identity()
    if min(height, breadth) >= 2:
        pooling, height, breadth = nn.MaxPool2d(2), height // 2, breadth // 2
    return nn.Sequential(
        nn.Conv2d(channels, width, kernel_size=3, padding=1),
        nn.ReLU(),
        pooling,
        nn.Conv2d(width, width, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(width * height * breadth, num_classes),
    )


TINY_CONVNET = ModelArchitecture(
    "tiny-convnet",
    "Two 3x3 convolutions with ReLU and one 2x2 max-pooling, then a linear layer (model.args.width, default 8)",
    tiny_convnet,
)
"""The architecture ``tiny-convnet``, registered by this package's ``fedmosaic.models`` entry point."""
