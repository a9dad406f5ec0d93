"""Where a run's federated jobs execute: in this process, on Flower's simulation, or on a deployment.

Every engine runs the same server and client logic; only the grid between
them changes. The in-process engine calls clients directly. The Flower
engines put a :class:`~fedmosaic.federation.flower.grid.FlowerGrid` in
between, and the clients run in Flower's ``ClientApp``
(:mod:`fedmosaic.experiments.flower_client`), which rebuilds each client's
logic from the job header every message carries.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from typing_extensions import override

from fedmosaic.experiments.config import FederationSection, fingerprint
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

    def header(self) -> dict[str, ConfigValue]:
        """What every Flower message of this job carries so a client can rebuild its logic.

        ``job`` keys the client's state in ``context.state``: it names the
        experiment (the fingerprint of its configuration, so the points of a
        grid do not share states), the run and the job.
        """
        header: dict[str, ConfigValue] = {
            "experiment": json.dumps(self.document, sort_keys=True, separators=(",", ":")),
            "run": self.run,
            "job": f"{fingerprint(self.document)}/{self.run}/{self.label}",
            "label": self.label,
            "seed": self.seed,
        }
        if self.data_dir is not None:
            header["data-dir"] = self.data_dir
        header.update(self.extra)
        return header


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
        with make_grid(self.federation, job.client_factory, job.seed, job.schedule, cores=self.cores) as grid:
            return federate(grid)


class DeploymentEngine(Engine):
    """Clients are SuperNodes of a running Flower deployment.

    Parameters
    ----------
    grid : flwr.serverapp.Grid
        The grid Flower gave the ``ServerApp`` this experiment runs in.
    """

    def __init__(self, grid: Any) -> None:
        self._grid = grid

    @override
    def run_job(self, job: JobSpec, federate: RunFederation) -> list[RoundRecord]:
        from fedmosaic.federation.flower.grid import FlowerGrid

        return federate(FlowerGrid(self._grid, job.header(), timeout_s=job.reply_timeout_s))


@dataclass
class SimulationEngine(Engine):
    """Clients are virtual SuperNodes of Flower's simulation (Ray backend), one per partition.

    Parameters
    ----------
    ray_address : str or None, default None
        Connect to this Ray cluster (``"auto"``: the one this machine belongs
        to) instead of starting a local Ray instance.
    cpus_per_client : float, default 1.0
        CPUs Ray reserves for each running client.
    init_args : dict, default empty
        Further arguments of ``ray.init``.
    """

    ray_address: str | None = None
    cpus_per_client: float = 1.0
    init_args: dict[str, Any] = field(default_factory=dict)

    @override
    def run_job(self, job: JobSpec, federate: RunFederation) -> list[RoundRecord]:
        from flwr.serverapp import Grid as FlowerGridApi
        from flwr.serverapp import ServerApp
        from flwr.simulation import run_simulation

        from fedmosaic.experiments.flower_client import client_app
        from fedmosaic.federation.flower.grid import FlowerGrid

        history: list[RoundRecord] = []
        server_app = ServerApp()

        @server_app.main()
        def main(grid: FlowerGridApi, context: Any) -> None:
            history.extend(federate(FlowerGrid(grid, job.header(), timeout_s=job.reply_timeout_s)))

        init_args: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, **self.init_args}
        if self.ray_address is not None:
            init_args["address"] = self.ray_address
        os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
        run_simulation(
            server_app=server_app,
            client_app=client_app,
            num_supernodes=job.schedule.num_clients,
            backend_config={
                "client_resources": {"num_cpus": self.cpus_per_client, "num_gpus": 0.0},
                "init_args": init_args,
            },
        )
        return history
