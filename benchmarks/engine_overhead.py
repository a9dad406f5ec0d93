"""Engine overhead: a FedAvg run on the in-process engine vs a bare PyTorch loop.

Both do exactly the same local training steps (MNIST, MLP 784-200-200-10,
10 clients with Dirichlet(0.5) label skew, 1 local epoch, batch 32, SGD 0.05)
and the same example-weighted averaging, and evaluate once at the end. They
are measured side by side, alternating, in one process; the ratios of the
median and of the best wall times are printed (target: at most 1.10).

Usage: python benchmarks/engine_overhead.py [--rounds 3] [--repeats 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import statistics
import time
from functools import partial
from pathlib import Path

import torch
from _common import default_data_dir, emit, machine
from torch.nn import functional as F

from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.workloads import ClassificationWorkload as FederatedData
from fedmosaic.experiments.workloads import federated_schedule
from fedmosaic.experiments.workloads import prepare_classification as prepare_data
from fedmosaic.federation import Federation, InProcessGrid, derive_seed
from fedmosaic.methods.arrays import seeded
from fedmosaic.methods.horizontal.fedavg.client import FedAvgClient
from fedmosaic.methods.horizontal.fedavg.server import FedAvgServer
from fedmosaic.methods.horizontal.models import build_model
from fedmosaic.methods.training import evaluate_classifier


def _config(rounds: int, data_dir: Path):
    return load_config(
        {
            "name": "engine-overhead",
            "data": {"dataset": "mnist", "data_dir": str(data_dir)},
            "partition": {"scheme": "dirichlet", "num_clients": 10, "alpha": 0.5},
            "federation": {"rounds": rounds, "evaluate_every": rounds},
            "model": {"kind": "mlp", "hidden": [200, 200]},
            "train": {"epochs": 1, "batch_size": 32, "lr": 0.05},
            "runs": [{"name": "FedAvg", "method": "fedavg"}],
        }
    )


def run_engine(config, data: FederatedData) -> tuple[float, float]:
    """Wall time and final accuracy of the FedAvg run on the in-process engine."""
    factory = partial(build_model, config.model, tuple(data.test.x.shape[1:]), data.test.num_classes)
    start = time.perf_counter()
    server = FedAvgServer(factory, data.test)
    grid = InProcessGrid(lambda k: FedAvgClient(factory, data.clients[k], config.train), config.seed)
    schedule = federated_schedule(config.federation, len(data.clients))
    history = Federation(
        server,
        grid,
        schedule,
        seed=config.seed,
        rounds=config.federation.rounds,
        evaluate_every=config.federation.evaluate_every,
    ).run()
    return time.perf_counter() - start, history[-1].metrics["accuracy"]


def run_bare(config, data: FederatedData) -> tuple[float, float]:
    """The same training steps written as a plain PyTorch loop."""
    start = time.perf_counter()
    factory = partial(build_model, config.model, tuple(data.test.x.shape[1:]), data.test.num_classes)
    global_model = seeded(derive_seed(config.seed, "init"), factory)
    local = factory()
    tensors = [(torch.from_numpy(c.x), torch.from_numpy(c.y)) for c in data.clients]
    sizes = torch.tensor([float(len(c.y)) for c in data.clients])
    for rnd in range(1, config.federation.rounds + 1):
        global_state = {k: v.clone() for k, v in global_model.state_dict().items()}
        total = {k: torch.zeros_like(v, dtype=torch.float64) for k, v in global_state.items()}
        for client, (x, y) in enumerate(tensors):
            local.load_state_dict(global_state)
            optimizer = torch.optim.SGD(local.parameters(), lr=config.train.lr)
            generator = torch.Generator().manual_seed(derive_seed(config.seed, rnd, client, "client"))
            order = torch.randperm(len(x), generator=generator)
            for first in range(0, len(x), config.train.batch_size):
                index = order[first : first + config.train.batch_size]
                optimizer.zero_grad(set_to_none=True)
                F.cross_entropy(local(x[index]), y[index]).backward()
                optimizer.step()
            for k, v in local.state_dict().items():
                total[k] += float(sizes[client]) * v.double()
        global_model.load_state_dict({k: (v / sizes.sum()).float() for k, v in total.items()})
    accuracy = evaluate_classifier(global_model, torch.from_numpy(data.test.x), torch.from_numpy(data.test.y))
    return time.perf_counter() - start, accuracy["accuracy"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    config = _config(args.rounds, args.data_dir)
    data = prepare_data(config)
    run_bare(_config(1, args.data_dir), data)  # warm-up: first optimizer use, allocator
    engine_times, bare_times = [], []
    for _ in range(args.repeats):
        bare_time, bare_accuracy = run_bare(config, data)
        engine_time, engine_accuracy = run_engine(config, data)
        bare_times.append(bare_time)
        engine_times.append(engine_time)
    emit(
        {
            "benchmark": "engine_overhead",
            "workload": "FedAvg, MNIST, MLP 784-200-200-10, 10 clients, Dirichlet 0.5, 1 epoch, batch 32",
            "rounds": args.rounds,
            "repeats": args.repeats,
            "engine_seconds": engine_times,
            "bare_seconds": bare_times,
            "engine_over_bare_median": statistics.median(engine_times) / statistics.median(bare_times),
            "engine_over_bare_best": min(engine_times) / min(bare_times),
            "target": "<= 1.10",
            "final_accuracy": {"engine": engine_accuracy, "bare": bare_accuracy},
            "machine": machine(),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
