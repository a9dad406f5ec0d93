"""Wall time of the F-CMs grid of one network (target for asia: under 10 minutes on 2 cores).

Runs the ``fcm-table`` preset restricted to one network: every model family x
{centralized, local, static, F-CMs} x 3 seeds, and prints the wall time, the
number of experiments and the resulting table.

Usage: python benchmarks/fcm_grid_time.py [--network asia] [--out FILE]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import emit, machine

from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.presets import preset_source
from fedmosaic.experiments.runner import run_experiment


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="asia")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    source = preset_source("fcm-table")
    source["grid"]["axes"]["data.network"] = [args.network]
    config = load_config(source)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        results = run_experiment(config, Path(folder))
    seconds = time.perf_counter() - start
    emit(
        {
            "benchmark": "fcm_grid_time",
            "network": args.network,
            "experiments": len(results["points"]),
            "wall_time_s": seconds,
            "target_s": 600,
            "table": results["table"],
            "machine": machine(),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
