"""The classification workload: a dataset partitioned across clients, and its jobs per setting."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.experiments.config import ExperimentConfig
from fedmosaic.experiments.job import Job, federated_schedule
from fedmosaic.experiments.run_encoders import check_run_classifiers
from fedmosaic.federation import Schedule
from fedmosaic.methods.horizontal.models import check_classifier
from fedmosaic.methods.horizontal.probes import Probe
from fedmosaic.methods.horizontal.task import HorizontalTask


@dataclass(frozen=True)
class ClassificationWorkload:
    """A dataset partitioned across clients, and the global test set.

    Parameters
    ----------
    clients : list of ArrayDataset
        Each client's training data.
    test : ArrayDataset
        The global test set.
    pretrain : ArrayDataset or None, default None
        A pooled sample for central pretraining of the initial model.
    figures : tuple of (name, caption, PNG bytes), default ()
        Pictures of the data for the report.
    probes : tuple of Probe, default ()
        Further measurements of the global model at every evaluation.
    """

    clients: list[ArrayDataset]
    test: ArrayDataset
    pretrain: ArrayDataset | None = None
    figures: tuple[tuple[str, str, bytes], ...] = ()
    probes: tuple[Probe, ...] = ()

    def checked(self, config: ExperimentConfig) -> ClassificationWorkload:
        """The workload itself, once ``config.model`` maps its examples to its classes' logits and every run's method takes it.

        Raises
        ------
        ConfigError
            Naming ``model.factory`` (or ``model.kind``), ``runs.N.method`` or ``runs.N.params.<field>`` otherwise.
        """
        model = check_classifier(config.model, tuple(self.test.x.shape[1:]), self.test.num_classes)
        check_run_classifiers(config, model)
        return self

    def jobs(self, setting: str, config: ExperimentConfig) -> list[Job]:
        """The federations that make up a run in ``setting``."""

        def task(clients: list[ArrayDataset]) -> HorizontalTask:
            return HorizontalTask(clients, self.test, config.model, config.train, self.pretrain, self.probes)

        if setting == "federated":
            schedule = federated_schedule(config.federation, len(self.clients))
            return [Job("federated", task(self.clients), schedule)]
        if setting == "centralized":
            pooled = ArrayDataset(
                x=np.concatenate([c.x for c in self.clients]),
                y=np.concatenate([c.y for c in self.clients]),
                num_classes=self.test.num_classes,
            )
            return [Job("centralized", task([pooled]), Schedule(num_clients=1), pooled.x.nbytes + pooled.y.nbytes)]
        return [Job(f"client-{k}", task([c]), Schedule(num_clients=1)) for k, c in enumerate(self.clients)]
