"""Simpson-MNIST's sample figure: each client's first samples, one row per client."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import numpy as np

from fedmosaic.data.simpson import DIGITS, SimpsonSplits
from fedmosaic.errors import ConfigError

if TYPE_CHECKING:
    from matplotlib.axes import Axes

GRID_CELL_INCHES = 1.0
"""Width and height of one sample in :func:`sample_grid_png`."""
GRID_DPI = 100
"""Pixels per inch of :func:`sample_grid_png`."""


def sample_grid_png(splits: SimpsonSplits, per_client: int = 8) -> bytes:
    r"""Draw the first samples of each client, one row per client, as PNG bytes.

    Each row shows a client's first ``per_client`` samples ordered dark to
    light, titled with the digit and its shade. The figure is drawn with
    matplotlib's default style at a fixed cell size and resolution and saved
    without metadata, so the same splits give the same bytes.

    Parameters
    ----------
    splits : SimpsonSplits
        The data to show.
    per_client : int, optional
        Samples per row, from 1 to the smallest client's size. Default 8.

    Returns
    -------
    bytes
        A PNG image.

    Raises
    ------
    ConfigError
        If ``per_client`` is out of range (field ``simpson.per_client``).

    Examples
    --------
    >>> import numpy as np
    >>> from fedmosaic.data.arrays import ArrayDataset, DatasetSplits
    >>> from fedmosaic.data.simpson import simpson_mnist
    >>> images = np.random.default_rng(0).random((60, 1, 4, 4), dtype=np.float32)
    >>> digits = ArrayDataset(images, np.tile([1, 7], 30), num_classes=10)
    >>> splits = simpson_mnist(DatasetSplits(digits, digits, "toy"), seed=0, num_clients=3,
    ...                        samples_per_client=10, pretrain_samples=0, validation_samples=0)
    >>> sample_grid_png(splits, per_client=3)[:8] == b"\x89PNG\r\n\x1a\n"
    True
    """
    import matplotlib.style  # here, not at the top: every client process imports this module, few draw
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    smallest = min(len(client) for client in splits.clients)
    if not 1 <= per_client <= smallest:
        raise ConfigError("simpson.per_client", f"must be from 1 to {smallest}, the smallest client (got {per_client})")
    rows = len(splits.clients)
    height = GRID_CELL_INCHES * rows + 0.5
    with matplotlib.style.context("default"):
        figure = Figure(figsize=(GRID_CELL_INCHES * per_client, height), dpi=GRID_DPI)
        FigureCanvasAgg(figure)
        # One axes showing every sample as a tile of one mosaic: drawing a figure of one axes takes a
        # tenth of the time of one axes per sample, and looks the same.
        ax = figure.add_axes((0.04, 0.01, 0.95, 1 - 0.45 / height))
        ax.set_axis_off()
        ax.imshow(_mosaic(splits, per_client, ax), interpolation="nearest")
        figure.suptitle("Simpson-MNIST: samples per client (digit, shade)")
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def _mosaic(splits: SimpsonSplits, per_client: int, ax: Axes) -> np.ndarray:
    """Each client's first ``per_client`` samples, dark to light, as one row of tiles on white, titled on ``ax``.

    A tile's title (digit, shade) goes in the white band above it, and each row's client to its left.
    """
    channels, side_height, side_width = splits.clients[0].x.shape[1:]
    band, gap = side_height // 2, max(1, side_width // 8)
    cell_height, cell_width = side_height + band, side_width + gap
    mosaic = np.ones((len(splits.clients) * cell_height, per_client * cell_width - gap, channels), dtype=np.float32)
    for k, (client, shades) in enumerate(zip(splits.clients, splits.shades, strict=True)):
        top = k * cell_height + band
        for j, row in enumerate(np.argsort(shades[:per_client], kind="stable")):
            left = j * cell_width
            mosaic[top : top + side_height, left : left + side_width] = client.x[row].transpose(1, 2, 0)
            title = f"{DIGITS[client.y[row]]}, {shades[row]:.2f}"
            ax.text(left + side_width / 2, top - 0.5, title, ha="center", va="bottom", fontsize=8)
        ax.text(-gap, top + side_height / 2, f"client {k}", ha="right", va="center", rotation=90, fontsize=9)
    return np.clip(mosaic, 0.0, 1.0)
