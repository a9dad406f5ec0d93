"""Per-round and start-up time of four ways to run the same FedAvg rounds, side by side in one run.

Workload (as in engine_overhead.py): MNIST, MLP 784-200-200-10, 10 clients
with Dirichlet(0.5) label skew, every client every round, 1 local epoch,
batch 32, SGD 0.05. Measured one after another in this process:

- ``bare``: a plain sequential PyTorch loop doing the same steps;
- ``sequential``: fedmosaic's in-process engine, one process (``workers = 1``);
- ``parallel``: the in-process engine with one worker process per core;
- ``flower``: Flower 1.42's simulation engine (Ray) with ``--flower-cpus``
  CPUs, one CPU per client, running fedmosaic's FedAvg client logic.

Per-round time is the median over rounds 2..R (round 1 builds the clients;
Flower's actors also load the data then); start-up is the time from the
start until round 1 begins (engine, processes, Ray). The in-process engines
and the bare loop use one PyTorch thread per process. For them the CPU time
per round (this process and its workers) is printed too: on a machine
shared with other work it measures overhead where wall time cannot.
Flower's CPU time per round (rounds 2..R) is that of this process and every
process below it (Ray's actors).

Usage: python benchmarks/parallel_engine.py [--rounds 4] [--flower-cpus 2] [--no-flower] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time
from functools import partial
from itertools import pairwise
from pathlib import Path

import torch
from _common import REPO, default_data_dir, emit, machine
from engine_overhead import _config, run_bare

from fedmosaic.experiments.inprocess_grid import make_grid
from fedmosaic.experiments.workloads import federated_schedule, prepare_classification
from fedmosaic.federation import Federation, RoundRecord
from fedmosaic.methods.horizontal.fedavg.client import FedAvgClient
from fedmosaic.methods.horizontal.fedavg.server import FedAvgServer
from fedmosaic.methods.horizontal.models import build_model
from fedmosaic.threads import usable_cores


def _summary(startup: float, rounds: list[float], accuracy: float | None, cpu: float | None = None) -> dict:
    return {
        "startup_seconds": startup,
        "round_seconds": rounds,
        "per_round_seconds": statistics.median(rounds[1:] or rounds),
        "cpu_seconds_per_round": None if cpu is None else cpu / len(rounds),
        "final_accuracy": accuracy,
    }


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure_bare(config, data) -> dict:
    """The bare loop, one round at a time (its rounds are independent of the engine)."""
    times = []
    cpu = _cpu_seconds()
    for _ in range(config.federation.rounds):
        seconds, _ = run_bare(
            config.model_copy(update={"federation": config.federation.model_copy(update={"rounds": 1})}), data
        )
        times.append(seconds)
    return _summary(0.0, times, None, _cpu_seconds() - cpu)


def measure_engine(config, data, workers: int) -> dict:
    """The in-process engine with ``workers`` processes: start-up, then per-round times."""
    federation = config.federation.model_copy(update={"workers": workers})
    factory = partial(build_model, config.model, tuple(data.test.x.shape[1:]), data.test.num_classes)
    schedule = federated_schedule(federation, len(data.clients))
    start, cpu = time.perf_counter(), _cpu_seconds()
    first: list[float] = []
    with make_grid(
        federation, lambda k: FedAvgClient(factory, data.clients[k], config.train), config.seed, schedule
    ) as grid:
        server = FedAvgServer(factory, data.test)
        run = Federation(
            server, grid, schedule, seed=config.seed, rounds=federation.rounds, evaluate_every=federation.rounds
        )
        original = server.initialize

        def initialize(seed: int) -> None:
            original(seed)
            first.append(time.perf_counter())

        server.initialize = initialize
        history: list[RoundRecord] = run.run()
    cpu = _cpu_seconds() - cpu
    return _summary(first[0] - start, [r.wall_time_s for r in history], history[-1].metrics["accuracy"], cpu)


def measure_flower(config, rounds: int, cpus: int) -> dict:
    """Flower's simulation engine (Ray) with ``cpus`` CPUs, one per client."""
    os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(REPO / "src"), str(REPO / "benchmarks"), os.environ.get("PYTHONPATH", "")]
    )
    from _flower_fedavg import client_app, server_app_for
    from flwr.simulation import run_simulation

    source = json.dumps(config.model_dump(mode="json", exclude_none=True))
    timings: list[tuple[float, float]] = []
    start = time.perf_counter()
    run_simulation(
        server_app=server_app_for(source, rounds, timings),
        client_app=client_app,
        num_supernodes=config.partition.num_clients,
        backend_config={
            "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
            "init_args": {"num_cpus": cpus, "num_gpus": 0},
        },
    )
    if len(timings) != rounds + 1:
        raise RuntimeError(f"Flower ran {len(timings) - 1} of {rounds} rounds")
    walls = [b[0] - a[0] for a, b in pairwise(timings)]
    cpu = timings[-1][1] - timings[1][1]  # rounds 2..R: Ray's start and data loading left out
    summary = _summary(timings[0][0] - start, walls, None)
    summary["cpu_seconds_per_round"] = cpu / max(1, rounds - 1)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--flower-cpus", type=int, default=2)
    parser.add_argument("--no-flower", action="store_true")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    config = _config(args.rounds, args.data_dir)
    data = prepare_classification(config)
    run_bare(_config(1, args.data_dir), data)  # warm-up: first optimizer use, allocator
    results = {
        "bare": measure_bare(config, data),
        "sequential": measure_engine(config, data, 1),
        "parallel": measure_engine(config, data, usable_cores()),
    }
    if not args.no_flower:
        results["flower"] = measure_flower(config, args.rounds, args.flower_cpus)
    ratios = {
        "sequential_over_bare": results["sequential"]["per_round_seconds"] / results["bare"]["per_round_seconds"],
        "parallel_over_bare": results["parallel"]["per_round_seconds"] / results["bare"]["per_round_seconds"],
        "sequential_over_bare_cpu": results["sequential"]["cpu_seconds_per_round"]
        / results["bare"]["cpu_seconds_per_round"],
        "parallel_over_bare_cpu": results["parallel"]["cpu_seconds_per_round"]
        / results["bare"]["cpu_seconds_per_round"],
    }
    if "flower" in results:
        ratios["parallel_over_flower"] = (
            results["parallel"]["per_round_seconds"] / results["flower"]["per_round_seconds"]
        )
        ratios["parallel_over_flower_cpu"] = (
            results["parallel"]["cpu_seconds_per_round"] / results["flower"]["cpu_seconds_per_round"]
        )
    emit(
        {
            "benchmark": "parallel_engine",
            "workload": "FedAvg, MNIST, MLP 784-200-200-10, 10 clients, Dirichlet 0.5, 1 epoch, batch 32",
            "rounds": args.rounds,
            "parallel_workers": usable_cores(),
            "flower_cpus": args.flower_cpus,
            "results": results,
            "ratios": ratios,
            "targets": "sequential_over_bare <= 1.05; parallel_over_flower <= 1; start-up < 1 s",
            "machine": machine() | {"load_average": os.getloadavg()},
        },
        args.out,
    )


if __name__ == "__main__":
    main()
