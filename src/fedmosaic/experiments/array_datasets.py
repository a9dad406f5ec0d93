"""Datasets of plain train and test arrays, as a plugin (or fedmosaic itself) registers them."""

from __future__ import annotations

from fedmosaic.deferred import Deferred
from fedmosaic.experiments.datasets import Dataset, Preparer, SplitsLoader


def array_dataset(
    name: str, summary: str, load: SplitsLoader, *, vertical: bool = False, random_split: bool = True
) -> Dataset:
    """A dataset of train and test arrays, partitioned across clients by ``[partition]``.

    Parameters
    ----------
    name, summary : str
        As :class:`Dataset`'s.
    load : callable (data_dir=..., seed=..., test_fraction=...) -> DatasetSplits
        Reads or makes the arrays; ``data_dir`` is the folder the user chose
        (``data.data_dir``, ``--data-dir``) or None.
    vertical : bool, default False
        Whether a ``[vertical]`` section may cut it into party blocks too.
    random_split : bool, default True
        Whether ``load`` holds out ``test_fraction`` at random; False for a
        published test split, so that ``data.test_fraction`` is refused as
        having no effect.

    Examples
    --------
    >>> import numpy as np
    >>> from fedmosaic.data.arrays import ArrayDataset, DatasetSplits
    >>> def noise(data_dir=None, seed=0, test_fraction=0.25):
    ...     rng = np.random.default_rng(seed)
    ...     part = lambda n: ArrayDataset(rng.normal(size=(n, 4)).astype(np.float32), rng.integers(0, 2, n), 2)
    ...     return DatasetSplits(part(80), part(20), "noise")
    >>> dataset = array_dataset("noise", "Gaussian noise, two classes", noise)
    >>> dataset.kind, len(dataset.load().train)
    ('classification', 80)
    """
    tasks: dict[str, Preparer] = {"classification": Deferred("fedmosaic.experiments.workloads:prepare_classification")}
    if vertical:
        tasks["vertical"] = Deferred("fedmosaic.experiments.vertical_workload:prepare_vertical")
    return Dataset(name, summary, tasks, load, random_split)
