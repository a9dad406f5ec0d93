"""The datasets fedmosaic knows by name, and where each one is published."""

from collections.abc import Callable
from functools import partial
from pathlib import Path

from fedmosaic.data._choices import unknown_choice
from fedmosaic.data.arrays import DatasetSplits
from fedmosaic.data.cifar import CIFAR10, CIFAR100, CIFAR_URL, load_cifar_splits
from fedmosaic.data.digits import load_digits_splits
from fedmosaic.data.idx import load_idx_splits
from fedmosaic.data.isolet import load_isolet_splits
from fedmosaic.data.sources import resolve_data_dir

MNIST_URL = "http://yann.lecun.com/exdb/mnist/"
FASHION_MNIST_URL = "https://github.com/zalandoresearch/fashion-mnist"
ISOLET_URL = "https://archive.ics.uci.edu/dataset/54/isolet"

_FILE_LOADERS: dict[str, Callable[..., DatasetSplits]] = {
    "mnist": partial(load_idx_splits, name="mnist", folder="mnist", source_url=MNIST_URL),
    "fashion-mnist": partial(
        load_idx_splits, name="fashion-mnist", folder="fashion-mnist", source_url=FASHION_MNIST_URL
    ),
    "isolet": partial(load_isolet_splits, source_url=ISOLET_URL),
    "cifar-10": partial(load_cifar_splits, layout=CIFAR10, source_url=CIFAR_URL),
    "cifar-100": partial(load_cifar_splits, layout=CIFAR100, source_url=CIFAR_URL),
}
DATASETS: tuple[str, ...] = tuple(sorted(("digits", *_FILE_LOADERS)))
"""Names accepted by :func:`load_dataset`."""


def load_dataset(
    name: str, *, data_dir: str | Path | None = None, seed: int = 0, test_fraction: float = 0.25
) -> DatasetSplits:
    """Load a dataset by name.

    ``"digits"`` ships with scikit-learn and is split at random (by ``seed``);
    ``"mnist"``, ``"fashion-mnist"``, ``"isolet"``, ``"cifar-10"`` and
    ``"cifar-100"`` are read from the data directory chosen by
    :func:`~fedmosaic.data.sources.resolve_data_dir` and keep their published
    train/test split.

    Parameters
    ----------
    name : str
        One of :data:`DATASETS`.
    data_dir : str or Path or None, optional
        Folder holding the dataset files (the ``--data-dir`` flag).
    seed : int, optional
        Seed of the train/test split of ``"digits"``; unused otherwise.
    test_fraction : float, optional
        Share of ``"digits"`` held out for testing; unused otherwise.

    Returns
    -------
    DatasetSplits
        The train and test samples.

    Raises
    ------
    ConfigError
        If ``name`` is unknown (field ``data.dataset``).
    DataFileMissing
        If a file of the dataset is not in the data directory.
    FedmosaicError
        If a file of the dataset is corrupt.

    Examples
    --------
    >>> splits = load_dataset("digits", seed=0)
    >>> splits.name, splits.train.num_classes
    ('digits', 10)
    """
    if name == "digits":
        return load_digits_splits(test_fraction=test_fraction, seed=seed)
    loader = _FILE_LOADERS.get(name)
    if loader is None:
        raise unknown_choice("data.dataset", "dataset", name, DATASETS)
    folder, how_chosen = resolve_data_dir(data_dir)
    return loader(folder, how_chosen=how_chosen)
