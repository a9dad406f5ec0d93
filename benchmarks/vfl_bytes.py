"""Communication and time per training epoch: FALSE-VFL vs LASER-VFL on ISOLET.

Both run on the same prepared data (ISOLET, 8 even parties, train MCAR 5,
500 labels, the vfl-isolet defaults) in one process, one after the other, on
the in-process engine, which counts every byte of every message. FALSE-VFL's
stage 1 (IWAE on every training row) and stage 2 (classifier on the labeled
rows, frozen generative model) are reported separately; LASER-VFL trains on
the labeled rows. No evaluation happens inside the measured rounds except in
the last one (reported apart).

Usage: python benchmarks/vfl_bytes.py [--stage1-epochs 2] [--stage2-epochs 2] [--out FILE]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

from _common import default_data_dir, emit, machine

from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.vertical_workload import prepare_vertical
from fedmosaic.federation import Federation, InProcessGrid, RoundRecord
from fedmosaic.methods.registry import get_method
from fedmosaic.threads import torch_threads


def _records(method: str, params: dict[str, Any], rounds: int, data_dir: Path) -> list[RoundRecord]:
    config = load_config(
        {
            "name": "vfl-bytes",
            "data": {"dataset": "isolet", "data_dir": str(data_dir)},
            "vertical": {"num_parties": 8, "train_missing": "mcar:0.5", "test_missing": "mcar:0.0"},
            "federation": {"rounds": rounds, "evaluate_every": rounds},
            "runs": [{"name": method, "method": method, "params": params}],
        }
    )
    (job,) = prepare_vertical(config).jobs("federated", config)
    registered = get_method(method)
    server, factory = registered.build(job.task, registered.params(**params))
    federation = Federation(
        server, InProcessGrid(factory, config.seed), job.schedule, seed=0, rounds=rounds, evaluate_every=rounds
    )
    with torch_threads(1):
        return federation.run()


def _summary(records: list[RoundRecord]) -> dict[str, float]:
    return {
        "epochs": len(records),
        "bytes_up_per_epoch": statistics.mean(r.bytes_up for r in records),
        "bytes_down_per_epoch": statistics.mean(r.bytes_down for r in records),
        "trips_per_epoch": statistics.mean(r.trips for r in records),
        "seconds_per_epoch": statistics.mean(r.wall_time_s for r in records),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage1-epochs", type=int, default=2)
    parser.add_argument("--stage2-epochs", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    stage1, stage2 = args.stage1_epochs, args.stage2_epochs
    if stage1 < 1 or stage2 < 2:
        parser.error("--stage1-epochs must be >= 1 and --stage2-epochs >= 2")
    false_vfl = _records("false-vfl", {"stage1_rounds": stage1}, stage1 + stage2 + 1, args.data_dir)
    laser = _records("laser-vfl", {}, stage1 + stage2 + 1, args.data_dir)
    emit(
        {
            "benchmark": "vfl_bytes",
            "data": "ISOLET, 8 parties, train MCAR 5, 500 labels, batch 128",
            "false_vfl": {
                "stage1": _summary(false_vfl[:stage1]),
                "stage2": _summary(false_vfl[stage1 + 1 : stage1 + stage2]),
                "stage2_first_epoch_includes_labeled_posteriors": _summary(false_vfl[stage1 : stage1 + 1]),
                "last_epoch_with_test_prediction": _summary(false_vfl[-1:]),
            },
            "laser_vfl": {
                "training": _summary(laser[:-1]),
                "last_epoch_with_test_prediction": _summary(laser[-1:]),
            },
            "machine": machine(),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
