"""scikit-learn's bundled 8x8 handwritten digits, split into train and test."""

import numpy as np

from fedmosaic.data.arrays import ArrayDataset, DatasetSplits
from fedmosaic.errors import ConfigError

_NUM_CLASSES = 10
_MAX_PIXEL = 16


def load_digits_splits(*, test_fraction: float = 0.25, seed: int = 0) -> DatasetSplits:
    """Load the 1797 digits that ship with scikit-learn (no download).

    The test part is a stratified random sample, the same for the same seed.

    Parameters
    ----------
    test_fraction : float, optional
        Share of the samples held out for testing, strictly between 0 and 1.
    seed : int, optional
        Seed of the split.

    Returns
    -------
    DatasetSplits
        Named ``"digits"``; images float32 in ``[0, 1]`` of shape ``(n, 1, 8, 8)``,
        labels 0..9 as int64.

    Raises
    ------
    ConfigError
        If ``test_fraction`` is not strictly between 0 and 1 (field ``data.test_fraction``).

    Examples
    --------
    >>> splits = load_digits_splits(test_fraction=0.25, seed=0)
    >>> len(splits.train), len(splits.test), splits.train.x.shape[1:]
    (1347, 450, (1, 8, 8))
    """
    if not 0 < test_fraction < 1:
        raise ConfigError("data.test_fraction", f"must be > 0 and < 1 (got {test_fraction})")
    # scikit-learn takes most of a second to import; only loading digits pays for it.
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    bunch = load_digits()
    images = (bunch.images[:, np.newaxis] / _MAX_PIXEL).astype(np.float32)
    labels = bunch.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        images, labels, test_size=test_fraction, random_state=seed, stratify=labels
    )
    return DatasetSplits(
        train=ArrayDataset(x_train, y_train, _NUM_CLASSES),
        test=ArrayDataset(x_test, y_test, _NUM_CLASSES),
        name="digits",
    )
