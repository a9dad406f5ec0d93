"""fedmosaic's own datasets, registered through its ``fedmosaic.datasets`` entry point as a plugin's are.

Their preparers are :class:`~fedmosaic.deferred.Deferred`: listing the datasets or checking a
configuration imports none of what reads or prepares their data (NumPy, PyTorch, pandas, pgmpy).
"""

from __future__ import annotations

from functools import partial

from fedmosaic.deferred import Deferred
from fedmosaic.experiments.array_datasets import array_dataset
from fedmosaic.experiments.datasets import Dataset

LOAD = Deferred("fedmosaic.data.catalog:load_dataset")
"""Reads a dataset of arrays by name (:func:`fedmosaic.data.catalog.load_dataset`), imported when first called."""

DATASETS: tuple[Dataset, ...] = (
    array_dataset(
        "digits",
        "scikit-learn's 8x8 digits, shipped with it (split at random)",
        partial(LOAD, "digits"),
        vertical=True,
    ),
    array_dataset(
        "mnist",
        "MNIST, 28x28 digits, from the data folder",
        partial(LOAD, "mnist"),
        vertical=True,
        random_split=False,
    ),
    array_dataset(
        "fashion-mnist",
        "Fashion-MNIST, 28x28 clothing, from the data folder",
        partial(LOAD, "fashion-mnist"),
        vertical=True,
        random_split=False,
    ),
    array_dataset(
        "isolet",
        "ISOLET, 617 spoken-letter features, from the data folder",
        partial(LOAD, "isolet"),
        vertical=True,
        random_split=False,
    ),
    array_dataset(
        "cifar-10",
        "CIFAR-10, 32x32 colour images of 10 classes, from the data folder (cifar-10-batches-py)",
        partial(LOAD, "cifar-10"),
        random_split=False,
    ),
    array_dataset(
        "cifar-100",
        "CIFAR-100, 32x32 colour images of 100 classes, from the data folder (cifar-100-python)",
        partial(LOAD, "cifar-100"),
        random_split=False,
    ),
    Dataset(
        "simpson-mnist",
        "MNIST's 1s and 7s coloured so that each client's trend reverses the pooled one (from MNIST)",
        {"classification": Deferred("fedmosaic.experiments.workloads:prepare_simpson")},
    ),
    Dataset(
        "bnlearn",
        "concept data sampled from a Bayesian network that ships with pgmpy",
        {"concepts": Deferred("fedmosaic.experiments.workloads:prepare_concepts")},
    ),
    Dataset(
        "shapes",
        "16x16 images of coloured shapes whose shape, colour, size, position and background are concepts (generated)",
        {"concepts": Deferred("fedmosaic.experiments.workloads:prepare_shapes")},
    ),
)
"""The built-in datasets, in the order ``fedmosaic presets`` lists them."""
