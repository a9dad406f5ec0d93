"""Where a run's federated jobs execute: in this process, on Flower's simulation, or on a deployment.

Every engine runs the same server and client logic; only the grid between
them changes. The in-process engine calls clients directly. The Flower
engines put a :class:`~fedmosaic.federation.flower.grid.FlowerGrid` in
between, and the clients run in Flower's ``ClientApp``
(:mod:`fedmosaic.experiments.flower_client`), which rebuilds each client's
logic from the job header every message carries.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass, field
from typing import Any

from typing_extensions import override

from fedmosaic.devices import resolve_device
from fedmosaic.experiments.inprocess_engine import Engine, InProcessEngine, JobSpec, RunFederation
from fedmosaic.federation import RoundRecord
from fedmosaic.threads import usable_cores

__all__ = ["DeploymentEngine", "Engine", "InProcessEngine", "JobSpec", "RunFederation", "SimulationEngine"]


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
    gpus_per_client : float, default 0.0
        GPUs Ray reserves for each running client (Flower's ``num_gpus``;
        :func:`gpus_per_client`): a share of one lets clients run side by side
        on it.
    init_args : dict, default empty
        Further arguments of ``ray.init``.
    """

    ray_address: str | None = None
    cpus_per_client: float = 1.0
    gpus_per_client: float = 0.0
    init_args: dict[str, Any] = field(default_factory=dict)
    _states: str | None = field(default=None, init=False, repr=False)

    def _state_dir(self) -> str:
        """A folder of this machine where the virtual nodes keep their client states from one job to the next.

        Each job is a simulation of its own, whose nodes start with an empty
        ``context.state``: a vertical task's passive parties find there the
        row alignment its alignment job left. Removed with the engine.
        """
        if self._states is None:
            self._states = tempfile.mkdtemp(prefix="fedmosaic-simulation-")
            weakref.finalize(self, shutil.rmtree, self._states, ignore_errors=True)
        return self._states

    @override
    def run_job(self, job: JobSpec, federate: RunFederation) -> list[RoundRecord]:
        from flwr.serverapp import Grid as FlowerGridApi
        from flwr.serverapp import ServerApp
        from flwr.simulation import run_simulation

        from fedmosaic.experiments.flower_client import client_app
        from fedmosaic.federation.flower.grid import FlowerGrid
        from fedmosaic.federation.flower.site_state import STATE_DIR

        history: list[RoundRecord] = []
        server_app = ServerApp()
        header = job.header() | {STATE_DIR: self._state_dir()}

        @server_app.main()
        def main(grid: FlowerGridApi, context: Any) -> None:
            history.extend(federate(FlowerGrid(grid, header, timeout_s=job.reply_timeout_s)))

        init_args: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, **self.init_args}
        if self.ray_address is not None:
            init_args["address"] = self.ray_address
        os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
        run_simulation(
            server_app=server_app,
            client_app=client_app,
            num_supernodes=job.schedule.num_clients,
            backend_config={
                "client_resources": {"num_cpus": self.cpus_per_client, "num_gpus": self.gpus_per_client},
                "init_args": init_args,
            },
        )
        return history


def gpus_per_client(device: str) -> float:
    """The GPUs each virtual client of Flower's simulation reserves for ``train.device`` on this machine.

    None off CUDA. On CUDA, the machine's GPUs shared evenly among as many
    clients as it has cores, one client per core running at a time as on the
    CPU; Ray then shows each client the GPU it was given as ``cuda``.

    Examples
    --------
    >>> gpus_per_client("cpu")
    0.0
    """
    if resolve_device(device).type != "cuda":
        return 0.0
    import torch

    return torch.cuda.device_count() / usable_cores()
