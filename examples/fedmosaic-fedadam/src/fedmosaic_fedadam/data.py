"""The ``blobs`` dataset: four Gaussian blobs of 1x8x8 images, made from the experiment's seed (no download)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from fedmosaic.plugin import ArrayDataset, DatasetSplits, array_dataset

NUM_CLASSES = 4
"""Classes, one blob each."""
IMAGE_SHAPE = (1, 8, 8)
"""Shape of one example: a one-channel 8x8 image."""
SAMPLES = 1200
"""Examples in all, train and test, the classes in equal numbers."""
SPREAD = 0.5
"""Standard deviation of the blob centres' pixels; the noise around a centre has 1."""


def load_blobs(data_dir: str | Path | None = None, seed: int = 0, test_fraction: float = 0.25) -> DatasetSplits:
    """Four Gaussian blobs: each class a random 8x8 centre image, each example its centre plus unit noise.

    Parameters
    ----------
    data_dir : str or Path or None, default None
        Unused: the data are made, not read (fedmosaic passes the data folder to every dataset).
    seed : int, default 0
        The experiment's seed: the centres, the examples and the split derive from it.
    test_fraction : float, default 0.25
        Share of the :data:`SAMPLES` examples held out for testing, in (0, 1).

    Returns
    -------
    DatasetSplits
        Float32 images of shape ``(n, 1, 8, 8)`` and int64 labels in ``[0, 4)``.

    Raises
    ------
    ValueError
        If ``test_fraction`` leaves no training or no test example.

    Examples
    --------
    >>> splits = load_blobs(seed=3)
    >>> splits.train.x.shape, splits.test.x.dtype, splits.test.y.dtype
    ((900, 1, 8, 8), dtype('float32'), dtype('int64'))
    >>> bool((load_blobs(seed=3).train.x == splits.train.x).all())
    True
    """
    test_size = round(SAMPLES * test_fraction)
    if not 0 < test_size < SAMPLES:
        raise ValueError(f"data.test_fraction must leave train and test examples, got {test_fraction}")
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, SPREAD, size=(NUM_CLASSES, *IMAGE_SHAPE))
    y = rng.permutation(np.arange(SAMPLES) % NUM_CLASSES).astype(np.int64)
    x = (centres[y] + rng.normal(size=(SAMPLES, *IMAGE_SHAPE))).astype(np.float32)
    train = ArrayDataset(x[test_size:], y[test_size:], NUM_CLASSES)
    test = ArrayDataset(x[:test_size], y[:test_size], NUM_CLASSES)
    return DatasetSplits(train=train, test=test, name="blobs")


BLOBS = array_dataset("blobs", "Four Gaussian blobs of 1x8x8 images, made from the seed (no download)", load_blobs)
"""The dataset ``blobs``, registered by this package's ``fedmosaic.datasets`` entry point."""
