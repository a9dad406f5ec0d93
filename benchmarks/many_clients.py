"""Many clients in bounded memory: 10, 100 and 1000 clients, 10% of them per round, same total data.

FedAvg on MNIST (MLP 784-200-200-10, IID split of the 60,000 training
images, 1 local epoch, batch 32). Each client count runs in a fresh process
(so that peak memory is its own); the script prints the time per round (the
median of the rounds between the first, which builds the clients, and the
last, which also evaluates), the time spent outside rounds (loading and
partitioning the data, writing results) and the peak resident memory of the
main process and of the largest worker process (which counts pages it shares
with the main process), for each count side by side.

Usage: python benchmarks/many_clients.py [--clients 10 100 1000] [--rounds 4] [--workers 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import default_data_dir, emit, machine


def _config(clients: int, rounds: int, workers: int | None, data_dir: Path) -> dict:
    federation = {"rounds": rounds, "fraction": 0.1, "evaluate_every": rounds}
    if workers is not None:
        federation["workers"] = workers
    return {
        "name": f"many-clients-{clients}",
        "data": {"dataset": "mnist", "data_dir": str(data_dir)},
        "partition": {"scheme": "iid", "num_clients": clients, "min_size": 1},
        "federation": federation,
        "model": {"kind": "mlp", "hidden": [200, 200]},
        "train": {"epochs": 1, "batch_size": 32, "lr": 0.05},
        "runs": [{"name": "FedAvg", "method": "fedavg"}],
    }


def measure_one(clients: int, rounds: int, workers: int | None, data_dir: Path) -> dict:
    """Run one client count in this process and return its numbers."""
    from fedmosaic.experiments.config import load_config
    from fedmosaic.experiments.runner import run_experiment

    config = load_config(_config(clients, rounds, workers, data_dir))
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        results = run_experiment(config, Path(out) / "run")
    total = time.perf_counter() - start
    history = results["runs"][0]["history"]
    times = [row["wall_time_s"] for row in history]
    return {
        "clients": clients,
        "sampled_per_round": history[0]["clients_sampled"],
        "round_seconds_median": statistics.median(times[1:-1] or times),
        "round_seconds": times,
        "outside_rounds_seconds": total - sum(times),
        "peak_rss_mb_main": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "peak_rss_mb_largest_worker": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "final_accuracy": results["runs"][0]["final"]["accuracy"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--workers", type=int, default=1, help="worker processes (0: the engine's default)")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    workers = args.workers or None
    if args.one is not None:
        print(json.dumps(measure_one(args.one, args.rounds, workers, args.data_dir)))
        return
    rows = []
    for clients in args.clients:
        command = [
            sys.executable,
            __file__,
            "--one",
            str(clients),
            "--rounds",
            str(args.rounds),
            "--workers",
            str(args.workers),
            "--data-dir",
            str(args.data_dir),
        ]
        rows.append(json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout))
    base = rows[0]
    emit(
        {
            "benchmark": "many_clients",
            "workload": "FedAvg, MNIST IID, MLP 784-200-200-10, 10% of clients per round, 1 epoch, batch 32",
            "workers": workers or "default (one per core)",
            "rows": rows,
            "memory_over_first": [r["peak_rss_mb_main"] / base["peak_rss_mb_main"] for r in rows],
            "round_time_over_first": [r["round_seconds_median"] / base["round_seconds_median"] for r in rows],
            "target": f"peak memory within 1.5x of {base['clients']} clients",
            "machine": machine(),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
