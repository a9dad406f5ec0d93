"""FedAvg vs centralized accuracy on the same data (the mnist-fedavg preset).

Runs the preset (10 clients, Dirichlet(0.5) label skew, MLP 784-200-200-10,
20 rounds of 1 local epoch; centralized trains 20 epochs on the pooled data)
and prints both final test accuracies and their ratio (target: FedAvg at
least 0.95 of centralized).

Usage: python benchmarks/fedavg_vs_centralized.py [--rounds 20] [--out FILE]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _common import default_data_dir, emit, machine

from fedmosaic.experiments.config import apply_overrides, load_config
from fedmosaic.experiments.presets import preset_source
from fedmosaic.experiments.runner import run_experiment


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    config = load_config(apply_overrides(preset_source("mnist-fedavg"), [f"federation.rounds={args.rounds}"]))
    with tempfile.TemporaryDirectory() as folder:
        results = run_experiment(config, Path(folder), data_dir=args.data_dir)
    final = {run["name"]: run["final"]["accuracy"] for run in results["runs"]}
    seconds = {run["name"]: run["wall_time_s"] for run in results["runs"]}
    emit(
        {
            "benchmark": "fedavg_vs_centralized",
            "preset": "mnist-fedavg",
            "rounds": args.rounds,
            "seed": config.seed,
            "accuracy": final,
            "fedavg_over_centralized": final["FedAvg"] / final["Centralized"],
            "target": ">= 0.95",
            "wall_time_s": seconds,
            "command": f"python benchmarks/fedavg_vs_centralized.py --rounds {args.rounds}",
            "machine": machine(),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
