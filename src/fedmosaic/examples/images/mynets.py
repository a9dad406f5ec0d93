"""A model of your own: any function that returns a ``torch.nn.Module`` of logits.

fedmosaic calls it as ``small_cnn(input_shape=..., num_classes=..., **args)``
(``args`` from ``[model] args`` in ``images.toml``).
"""

from torch import nn


def small_cnn(input_shape: tuple[int, ...], num_classes: int, width: int = 16) -> nn.Sequential:
    """One 3x3 convolution block (ReLU, 2x2 max-pooling), then a linear layer to the classes' logits."""
    channels, height, breadth = input_shape
    return nn.Sequential(
        nn.Conv2d(channels, width, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(width * (height // 2) * (breadth // 2), num_classes),
    )
