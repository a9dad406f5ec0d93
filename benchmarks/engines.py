"""The same experiment on the three engines, side by side: wall time, trips and bytes per round.

Runs one preset in process, on Flower's simulation (Ray, started by the run)
and on a loopback deployment (a SuperLink and one SuperNode per client on
127.0.0.1, started and stopped by the run), one after the other in one
process. ``--case`` picks the preset and its overrides: ``horizontal`` (the
default) is digits-fedavg cut to 3 clients and 3 rounds, with FedAvg and
FedCFA; ``vertical`` is FALSE-VFL on a tiny vertical digits task (4 parties
of 4x4-pixel patches, 3 of them SuperNodes, 120 training rows in one
mini-batch, 1 round of stage 1 and 1 of stage 2 with an evaluation: 7 trips
in all). ``--preset`` and ``--set`` replace the case's. Prints, per engine
and run: the seconds of the first round and the mean of the later ones (as
the round loop measures them), trips and bytes per round, the total wall
time including start-up, the final accuracy, and whether every engine gave
the same final metrics.

Usage: python benchmarks/engines.py [--case horizontal|vertical] [--preset NAME] [--set key=value ...] [--out FILE]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import emit, machine

from fedmosaic.deploy.local import deploy_experiment
from fedmosaic.experiments.config import apply_overrides, load_config
from fedmosaic.experiments.presets import resolve_experiment
from fedmosaic.experiments.runner import run_experiment

CASES: dict[str, tuple[str, list[str]]] = {
    "horizontal": (
        "digits-fedavg",
        [
            "partition.num_clients=3",
            "federation.rounds=3",
            'runs=[{name="FedAvg",method="fedavg"},{name="FedCFA",method="fedcfa"}]',
        ],
    ),
    "vertical": (
        "vfl-isolet",
        [
            "data.dataset=digits",
            "vertical.num_parties=4",
            'vertical.split="patches"',
            'vertical.test_missing="mcar:0.2"',
            "vertical.label_budget=40",
            "vertical.train_rows=120",
            "vertical.test_rows=60",
            "federation.rounds=2",
            "federation.evaluate_every=2",
            'runs=[{name="FALSE-VFL",method="false-vfl",params={stage1_rounds=1,batch_size=128,hidden=16,classifier_passes=1}}]',
        ],
    ),
}
"""Each case's preset and overrides."""


def run_on(engine: str, source: dict[str, Any], out: Path) -> tuple[dict[str, Any], float]:
    """Results of the experiment on ``engine`` and the total wall time (start-up included)."""
    start = time.perf_counter()
    if engine == "flower":
        results = deploy_experiment(source, out, write=lambda line: None)
    else:
        results = run_experiment(load_config(apply_overrides(source, [f"federation.engine={engine}"])), out)
    return results, time.perf_counter() - start


def per_round(run: dict[str, Any]) -> dict[str, Any]:
    """Round times, trips and bytes of one run's history."""
    rows = run["history"]
    later = [row["wall_time_s"] for row in rows[1:]] or [rows[0]["wall_time_s"]]
    return {
        "first_round_s": round(rows[0]["wall_time_s"], 3),
        "later_rounds_mean_s": round(statistics.mean(later), 3),
        "trips_per_round": statistics.mean(row["trips"] for row in rows),
        "bytes_up_per_round": statistics.mean(row["bytes_up"] for row in rows),
        "bytes_down_per_round": statistics.mean(row["bytes_down"] for row in rows),
        "accuracy": run["final"].get("accuracy"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=sorted(CASES), default="horizontal")
    parser.add_argument("--preset", default=None)
    parser.add_argument("--set", dest="overrides", action="append", default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    preset, overrides = CASES[args.case]
    preset = args.preset or preset
    overrides = overrides if args.overrides is None else args.overrides
    source = apply_overrides(resolve_experiment(preset), overrides)
    engines: dict[str, Any] = {}
    finals = {}
    with tempfile.TemporaryDirectory(prefix="fedmosaic-engines-") as folder:
        for engine in ("inprocess", "flower-simulation", "flower"):
            results, total = run_on(engine, source, Path(folder) / engine)
            finals[engine] = [run["final"] for run in results["runs"]]
            engines[engine] = {
                "total_wall_s": round(total, 2),
                "runs": {run["name"]: per_round(run) for run in results["runs"]},
            }
    emit(
        {
            "benchmark": "engines",
            "case": args.case,
            "preset": preset,
            "overrides": overrides,
            "engines": engines,
            "identical_final_metrics": finals["inprocess"] == finals["flower-simulation"] == finals["flower"],
            "machine": machine(),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
