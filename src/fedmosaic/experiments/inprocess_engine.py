"""What every engine implements (:class:`Engine`, running a :class:`JobSpec`), and the default in-process engine.

The Flower engines (:mod:`fedmosaic.experiments.engines`) build on these; the
workloads that run federations of their own before training (the federated
scaling of sites' tables) need only this module.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from typing_extensions import override

from fedmosaic.experiments.config import FederationSection, result_fingerprint
from fedmosaic.experiments.inprocess_grid import make_grid
from fedmosaic.federation import ClientLogic, Grid, RoundRecord, Schedule
from fedmosaic.federation.message import ConfigValue

RunFederation = Callable[[Grid], list[RoundRecord]]
"""Runs a job's federation over a grid and returns its history."""


@dataclass(frozen=True)
class JobSpec:
    """What an engine needs to run one federated job.

    Parameters
    ----------
    document : dict
        The experiment's validated configuration (JSON-ready).
    run : int
        Index of the run in ``document["runs"]``.
    label : str
        The job's label within the run.
    schedule : Schedule
        Who takes part when; its clients are the job's partitions.
    seed : int
        Experiment seed.
    client_factory : callable int -> ClientLogic
        Builds a client's logic in this process (in-process engine).
    data_dir : str or None, default None
        Data folder the clients of a simulation read.
    reply_timeout_s : float, default 300.0
        Longest wait for the replies of one exchange (Flower engines).
    extra : dict, default empty
        Further header entries the clients need (e.g. the federated feature
        scaling of sites' own tables).
    sequential : bool, default False
        Run the clients in the run's process unless ``federation.workers``
        asks for workers (in-process engine). Vertical methods exchange with
        every party on every batch: a worker process would add a pickle and
        a pipe trip per batch, and parties in one process handle an exchange
        together (:meth:`~fedmosaic.federation.logic.ClientLogic.handle_many`).
    """

    document: dict[str, Any]
    run: int
    label: str
    schedule: Schedule
    seed: int
    client_factory: Callable[[int], ClientLogic]
    data_dir: str | None = None
    reply_timeout_s: float = 300.0
    extra: dict[str, ConfigValue] = field(default_factory=dict)
    sequential: bool = False

    def header(self) -> dict[str, ConfigValue]:
        """What every Flower message of this job carries so a client can rebuild its logic.

        ``job`` keys the client's state in ``context.state``: it names the
        experiment (the fingerprint of its configuration, so the points of a
        grid do not share states), the run and the job.
        """
        header: dict[str, ConfigValue] = {
            "experiment": json.dumps(self.document, sort_keys=True, separators=(",", ":")),
            "run": self.run,
            "job": job_key(self.document, self.run, self.label),
            "label": self.label,
            "seed": self.seed,
        }
        if self.data_dir is not None:
            header["data-dir"] = self.data_dir
        header.update(self.extra)
        return header


def job_key(document: dict[str, Any], run: int, label: str) -> str:
    """The key of a job's client states: the experiment's result fingerprint, the run and the job's label.

    Keys that never change results (``federation.workers``) are left out, so
    that a run resumed with other workers finds the states its sites kept.

    Examples
    --------
    >>> job_key({"name": "x"}, 0, "federated").endswith("/0/federated")
    True
    >>> job_key({"name": "x", "federation": {"workers": 1}}, 0, "federated") == job_key(
    ...     {"name": "x", "federation": {"workers": 4}}, 0, "federated")
    True
    """
    return f"{result_fingerprint(document)}/{run}/{label}"


class Engine(ABC):
    """Runs a job's federation over the engine's grid."""

    @abstractmethod
    def run_job(self, job: JobSpec, federate: RunFederation) -> list[RoundRecord]:
        """Build the grid for ``job``, run ``federate`` over it and return the history."""


@dataclass
class InProcessEngine(Engine):
    """Clients run in this process, or in its worker processes (the default engine).

    Parameters
    ----------
    federation : FederationSection, default FederationSection()
        Workers, threads, client cache and state memory (:func:`make_grid`).
    cores : int or None, default None
        CPU cores the job may use (default: all this process may run on).
    """

    federation: FederationSection = field(default_factory=FederationSection)
    cores: int | None = None

    @override
    def run_job(self, job: JobSpec, federate: RunFederation) -> list[RoundRecord]:
        with make_grid(
            self.federation, job.client_factory, job.seed, job.schedule, cores=self.cores, sequential=job.sequential
        ) as grid:
            return federate(grid)
