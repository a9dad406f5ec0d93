"""Three workloads on the three engines, side by side in one run: wall time per round and the cost of a trip.

Each workload runs in process, on Flower's simulation (Ray, started by the
run) and on a loopback deployment (a SuperLink and one warm SuperNode per
client on 127.0.0.1, started and stopped by the run), one after the other in
one process:

- ``fedavg-digits``: FedAvg on digits, 3 clients, 4 rounds (1 trip a round);
- ``fcms-asia``: F-CMs on asia, ``concepts.num_clients = 4`` over 4 SuperNodes,
  3 from the start and 1 joining at round 2 (2 trips in that round), 4 rounds;
- ``false-vfl-isolet``: FALSE-VFL on a small ISOLET split (4 parties, so 3
  SuperNodes; 120 training rows in one mini-batch, 40 labels, 60 test rows),
  2 rounds of stage 1 and 1 of stage 2 with an evaluation.

Prints (and writes to ``--out``) per workload and engine: the seconds of the
first round and the mean of the later ones (as the round loop measures them),
trips and bytes per round, the total wall time including start-up, whether
every engine gave the same final metrics, and the deployment's overhead per
trip: over the later rounds, (deployment seconds - in-process seconds) /
trips. ``--markdown`` writes the table docs/flower-internals.md shows.

Usage: python benchmarks/engines.py [--workload NAME ...] [--without-simulation] [--data-dir DIR] [--out FILE]
[--markdown FILE]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import default_data_dir, emit, machine

from fedmosaic.deploy.local import deploy_experiment
from fedmosaic.experiments.config import apply_overrides, load_config
from fedmosaic.experiments.presets import resolve_experiment
from fedmosaic.experiments.runner import run_experiment

WORKLOADS: dict[str, tuple[str, list[str]]] = {
    "fedavg-digits": (
        "digits-fedavg",
        ["partition.num_clients=3", "federation.rounds=4", 'runs=[{name="FedAvg",method="fedavg"}]'],
    ),
    "fcms-asia": (
        "fcm-asia",
        [
            "concepts.num_clients=4",
            "concepts.initial_clients=3",
            "concepts.join_round=2",
            "federation.rounds=4",
            'runs=[{name="F-CMs",method="fcm",params={model={family="cbm"}}}]',
        ],
    ),
    "false-vfl-isolet": (
        "vfl-isolet",
        [
            "vertical.num_parties=4",
            'vertical.test_missing="mcar:0.2"',
            "vertical.label_budget=40",
            "vertical.train_rows=120",
            "vertical.test_rows=60",
            "federation.rounds=3",
            "federation.evaluate_every=3",
            'runs=[{name="FALSE-VFL",method="false-vfl",params={stage1_rounds=2,batch_size=128,hidden=16,classifier_passes=1}}]',
        ],
    ),
}
"""Each workload's preset and overrides."""
ENGINES = ("inprocess", "flower-simulation", "flower")


def run_on(engine: str, source: dict[str, Any], out: Path, data_dir: Path) -> tuple[dict[str, Any], float]:
    """Results of the experiment on ``engine`` and the total wall time (start-up included)."""
    start = time.perf_counter()
    if engine == "flower":
        results = deploy_experiment(source, out, data_dir=data_dir, write=lambda line: None)
    else:
        config = load_config(apply_overrides(source, [f"federation.engine={engine}"]))
        results = run_experiment(config, out, data_dir=data_dir)
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


def overhead_per_trip(deployed: dict[str, Any], in_process: dict[str, Any]) -> float:
    """Seconds a trip of the later rounds costs on the deployment beyond the same work in process."""
    later = list(zip(deployed["history"][1:], in_process["history"][1:], strict=True))
    trips = sum(row["trips"] for row, _ in later)
    return sum(row["wall_time_s"] - same["wall_time_s"] for row, same in later) / trips


def bench(name: str, data_dir: Path, folder: Path, engines_run: tuple[str, ...] = ENGINES) -> dict[str, Any]:
    """One workload on the engines ``engines_run`` (in process and the deployment always)."""
    preset, overrides = WORKLOADS[name]
    source = apply_overrides(resolve_experiment(preset), overrides)
    results, engines = {}, {}
    for engine in engines_run:
        results[engine], total = run_on(engine, source, folder / name / engine, data_dir)
        engines[engine] = {
            "total_wall_s": round(total, 2),
            "runs": {run["name"]: per_round(run) for run in results[engine]["runs"]},
        }
    finals = {engine: [run["final"] for run in results[engine]["runs"]] for engine in engines_run}
    return {
        "preset": preset,
        "overrides": overrides,
        "engines": engines,
        "identical_final_metrics": all(finals[engine] == finals["inprocess"] for engine in engines_run),
        "overhead_per_trip_s": {
            run["name"]: round(overhead_per_trip(run, same), 3)
            for run, same in zip(results["flower"]["runs"], results["inprocess"]["runs"], strict=True)
        },
    }


def markdown(workloads: dict[str, dict[str, Any]]) -> str:
    """The table of docs/flower-internals.md: one row per workload, run and engine."""
    lines = [
        "| workload | engine | first round (s) | later rounds (s, mean) | trips / round | overhead / trip (s) "
        "| total with start-up (s) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, entry in workloads.items():
        for engine in entry["engines"]:
            for run, row in entry["engines"][engine]["runs"].items():
                overhead = f"{entry['overhead_per_trip_s'][run]:.2f}" if engine == "flower" else ""
                lines.append(
                    f"| {name} ({run}) | {engine} | {row['first_round_s']:.2f} | {row['later_rounds_mean_s']:.2f} "
                    f"| {row['trips_per_round']:g} | {overhead} | {entry['engines'][engine]['total_wall_s']:.1f} |"
                )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", action="append", choices=sorted(WORKLOADS), default=None)
    parser.add_argument("--without-simulation", action="store_true", help="in process and the deployment only")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--markdown", type=Path, default=None)
    args = parser.parse_args()
    data_dir = (args.data_dir or default_data_dir()).resolve()
    with tempfile.TemporaryDirectory(prefix="fedmosaic-engines-") as folder:
        engines = tuple(e for e in ENGINES if not (args.without_simulation and e == "flower-simulation"))
        workloads = {name: bench(name, data_dir, Path(folder), engines) for name in args.workload or WORKLOADS}
    emit({"benchmark": "engines", "workloads": workloads, "machine": machine()}, args.out)
    if args.markdown is not None:
        args.markdown.write_text(markdown(workloads))


if __name__ == "__main__":
    main()
