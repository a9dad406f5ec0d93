"""The in-process engine's grid: clients one after another, or in parallel worker processes."""

from __future__ import annotations

from fedmosaic.devices import compute_device
from fedmosaic.errors import ConfigError
from fedmosaic.experiments.config import FederationSection
from fedmosaic.federation import Grid, InProcessGrid, Schedule
from fedmosaic.federation.host import ClientFactory
from fedmosaic.federation.parallel import ParallelGrid
from fedmosaic.federation.processes import fork_available
from fedmosaic.threads import usable_cores


def worker_count(federation: FederationSection, schedule: Schedule, cores: int, *, sequential: bool = False) -> int:
    """Worker processes for a federation: ``federation.workers``, else one per core when a round has several clients.

    Never more than a round's clients. A ``sequential`` job (a vertical
    method's) gets one unless ``federation.workers`` asks for more.

    Examples
    --------
    >>> from fedmosaic.experiments.config import FederationSection
    >>> worker_count(FederationSection(), Schedule(num_clients=10), cores=4)
    4
    >>> worker_count(FederationSection(), Schedule(num_clients=1), cores=4)
    1
    >>> worker_count(FederationSection(workers=8), Schedule(num_clients=3), cores=4)
    3
    >>> worker_count(FederationSection(), Schedule(num_clients=7), cores=4, sequential=True)
    1
    """
    default = 1 if sequential or not fork_available() else cores
    wanted = federation.workers if federation.workers is not None else default
    return max(1, min(wanted, schedule.largest_sample()))


def make_grid(
    federation: FederationSection,
    client_factory: ClientFactory,
    seed: int,
    schedule: Schedule,
    *,
    cores: int | None = None,
    sequential: bool = False,
) -> Grid:
    """The in-process engine, with parallel workers when :func:`worker_count` gives more than one.

    Parameters
    ----------
    federation : FederationSection
        Workers, threads, client cache and state memory.
    client_factory : callable int -> ClientLogic
        The method's clients.
    seed : int
        Experiment seed.
    schedule : Schedule
        Who takes part when (its largest round bounds the workers).
    cores : int or None, default None
        CPU cores the federation may use (default: all this process may run on).
    sequential : bool, default False
        One process unless ``federation.workers`` asks for workers
        (:attr:`~fedmosaic.experiments.inprocess_engine.JobSpec.sequential`).

    Off the CPU (:func:`~fedmosaic.devices.compute_device`), the clients run
    one after another in this process, on its device: worker processes are
    forked, and a GPU this process has used cannot be used in a forked one.

    Raises
    ------
    ConfigError
        When ``federation.workers`` asks for workers on a system that cannot
        fork, or off the CPU.
    """
    cores = cores or usable_cores()
    asked = federation.workers is not None and federation.workers > 1
    if asked and not fork_available():
        raise ConfigError("federation.workers", "worker processes need a system with fork (Linux, macOS); use 1")
    device = compute_device()
    if asked and device.type != "cpu":
        raise ConfigError(
            "federation.workers",
            f"worker processes are forked and cannot use {device.type}, where train.device puts the clients: "
            "use 1, or engine 'flower-simulation' for clients side by side on the GPU",
        )
    workers = 1 if device.type != "cpu" else worker_count(federation, schedule, cores, sequential=sequential)
    budget = int(federation.client_memory_mb * 2**20)
    if workers == 1:
        return InProcessGrid(client_factory, seed, cache=federation.client_cache, state_budget_bytes=budget)
    return ParallelGrid(
        client_factory,
        seed,
        workers,
        threads=max(1, min(federation.threads, cores // workers)),
        cache=federation.client_cache,
        state_budget_bytes=budget,
    )
