"""scikit-learn's bundled 8x8 handwritten digits, split into train and test.

The digits are read from the file scikit-learn ships (``sklearn/datasets/data/digits.csv.gz``,
as its ``load_digits`` reads it) and split as its stratified ``train_test_split`` splits them
(:func:`~fedmosaic.data.stratified.stratified_split`), without importing scikit-learn, whose
import costs as much as PyTorch's.
"""

import gzip
import importlib.util
from pathlib import Path

import numpy as np

from fedmosaic.data.arrays import ArrayDataset, DatasetSplits
from fedmosaic.data.stratified import stratified_split
from fedmosaic.errors import ConfigError, FedmosaicError

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
        If ``test_fraction`` is not strictly between 0 and 1, or leaves the train or the test part
        fewer rows than classes (field ``data.test_fraction``).

    Examples
    --------
    >>> splits = load_digits_splits(test_fraction=0.25, seed=0)
    >>> len(splits.train), len(splits.test), splits.train.x.shape[1:]
    (1347, 450, (1, 8, 8))
    """
    if not 0 < test_fraction < 1:
        raise ConfigError("data.test_fraction", f"must be > 0 and < 1 (got {test_fraction})")
    with gzip.open(_digits_file(), mode="rt", encoding="utf-8") as text:
        data = np.loadtxt(text, delimiter=",")
    images = (data[:, :-1].reshape(-1, 1, 8, 8) / _MAX_PIXEL).astype(np.float32)
    labels = data[:, -1].astype(int).astype(np.int64)
    try:
        train, test = stratified_split(labels, test_fraction, seed)
    except ValueError as error:
        raise ConfigError("data.test_fraction", f"{test_fraction} splits the 1797 digits so that {error}") from None
    return DatasetSplits(
        train=ArrayDataset(images[train], labels[train], _NUM_CLASSES),
        test=ArrayDataset(images[test], labels[test], _NUM_CLASSES),
        name="digits",
    )


def _digits_file() -> Path:
    """The digits file that scikit-learn ships, found without importing scikit-learn."""
    spec = importlib.util.find_spec("sklearn")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / "datasets" / "data" / "digits.csv.gz"
        if path.is_file():
            return path
    raise FedmosaicError("the digits ship with scikit-learn, which is not installed (pip install scikit-learn)")
