"""Datasets by name, and the workload each prepares for a kind of task: fedmosaic's own and plugins'.

A :class:`Dataset` maps each kind of task it can give (``"classification"``,
``"concepts"``, ``"vertical"``) to the function that prepares that task's
workload from an experiment. fedmosaic's own are registered through its
``fedmosaic.datasets`` entry point (:mod:`~fedmosaic.experiments.builtin_datasets`),
as a plugin's are; :func:`~fedmosaic.experiments.array_datasets.array_dataset`
makes one from a function that returns train and test arrays, which is all
most plugins need.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from fedmosaic.errors import ConfigError
from fedmosaic.registry import Registry

if TYPE_CHECKING:
    from fedmosaic.data.arrays import DatasetSplits

ExperimentConfig = Any
"""A validated :class:`~fedmosaic.experiments.config.ExperimentConfig` (not imported: it reads this registry)."""

Preparer = Callable[..., Any]
"""``prepare(config, data_dir=...)``: the workload of an experiment (before anything is written)."""
SplitsLoader: TypeAlias = "Callable[..., DatasetSplits]"
"""``load(data_dir=..., seed=..., test_fraction=...)``: a dataset's train and test arrays."""


@dataclass(frozen=True)
class Dataset:
    """A registered dataset.

    Parameters
    ----------
    name : str
        Name used as ``data.dataset``.
    summary : str
        One line for listings.
    tasks : mapping of str to callable
        Kind of task -> ``prepare(config, data_dir=...)``, the workload for it.
        The first is the task the dataset gives without a ``[vertical]`` section.
    load : callable or None, default None
        ``load(data_dir=..., seed=..., test_fraction=...)`` -> DatasetSplits, for
        datasets of plain arrays (what other datasets build on, as Simpson-MNIST on MNIST).
    random_split : bool, default False
        Whether ``load`` splits at random by ``data.test_fraction`` (else the
        key is refused as having no effect: a fixed test split).
    """

    name: str
    summary: str
    tasks: Mapping[str, Preparer] = field(default_factory=dict)
    load: SplitsLoader | None = None
    random_split: bool = False

    @property
    def kind(self) -> str:
        """The task the dataset gives by default (the first of :attr:`tasks`)."""
        return next(iter(self.tasks), "classification")

    def preparer(self, kind: str) -> Preparer:
        """How this dataset prepares a ``kind`` task.

        Raises
        ------
        ConfigError
            Naming ``data.dataset`` and the kinds it gives.
        """
        if kind not in self.tasks:
            raise ConfigError("data.dataset", f"'{self.name}' gives no {kind} task (it gives: {', '.join(self.tasks)})")
        return self.tasks[kind]


DATASETS: Registry[Dataset] = Registry(
    "dataset", "fedmosaic.datasets", Dataset, builtin="fedmosaic.experiments.builtin_datasets:DATASETS"
)
"""Every registered dataset, by name: fedmosaic's first, then each plugin's."""


def get_dataset(name: str) -> Dataset:
    """The dataset registered as ``name`` (one line naming ``data.dataset`` otherwise)."""
    return DATASETS.get(name, field="data.dataset")


def load_splits(config: ExperimentConfig, data_dir: str | Path | None, name: str | None = None) -> DatasetSplits:
    """The train and test arrays of ``name`` (default: the experiment's dataset), from the experiment's data folder.

    Raises
    ------
    ConfigError
        If the dataset is not one of plain arrays.
    """
    dataset = get_dataset(name or config.data.dataset)
    if dataset.load is None:
        raise ConfigError("data.dataset", f"'{dataset.name}' is not a dataset of arrays")
    return dataset.load(
        data_dir=data_dir if data_dir is not None else config.data.data_dir,
        seed=config.seed,
        test_fraction=config.data.test_fraction,
    )
