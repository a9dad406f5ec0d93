"""Each camera's own encoder: any function that returns a ``torch.nn.Module`` of features.

fedmosaic calls it once per party as ``view_encoder(input_shape=..., output_dim=..., party=k, **args)``:
``input_shape`` is the shape of that camera's view (``shape`` in ``views.toml``).
"""

from torch import nn


def view_encoder(input_shape: tuple[int, ...], output_dim: int, party: int, width: int = 16) -> nn.Sequential:
    """Two 3x3 convolutions over a view of ``input_shape`` (channels, rows, cols), then a linear layer to ``output_dim``."""
    channels, rows, cols = input_shape
    return nn.Sequential(
        nn.Conv2d(channels, width, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.Conv2d(width, width, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(width * rows * cols, output_dim),
    )
