"""Three workloads on the CPU and, where one is present, on CUDA, in one run: wall time, ratio and agreement.

Each workload is one run of a shipped preset, cut to its first run and to the
rounds named below, in process with one worker (the clients one after another,
as off the CPU), once per device (``train.device``):

- ``fedcfa-cnn``: one round of ``fedcfa-cnn-ablation`` (FedCFA, MNIST, 60
  clients of which 12 train, the small CNN);
- ``false-vfl``: FALSE-VFL of ``vfl-isolet`` (8 parties, 500 labels), one
  epoch of stage 1 then one round of stage 2 with its importance-sampled
  prediction on the validation rows and one test setting (MCAR 0);
- ``fcms-alarm``: one round of ``fcm-alarm`` (F-CMs, 10 clients from the start).

Prints (and writes to ``--out``) per workload and device: the wall time of the
run (start-up included) and its final accuracy; with CUDA, the ratio of the CPU's
time to CUDA's and whether the final accuracies agree within
:data:`TOLERANCE` (CUDA's kernels round differently, so bit-identity is not
expected). Where CUDA is absent it says so and times the CPU alone.

Usage: python benchmarks/devices.py [--workload NAME ...] [--data-dir DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from _common import default_data_dir, emit, machine

from fedmosaic.experiments.config import apply_overrides, load_config
from fedmosaic.experiments.presets import resolve_experiment
from fedmosaic.experiments.runner import run_experiment

TOLERANCE = 0.02
"""Largest difference of final accuracy between the CPU and CUDA that counts as agreement (absolute)."""

ONE_WORKER = ["federation.workers=1", "federation.evaluate_every=1"]
WORKLOADS: dict[str, tuple[str, list[str]]] = {
    "fedcfa-cnn": ("fedcfa-cnn-ablation", ["federation.rounds=1"]),
    "false-vfl": (
        "vfl-isolet",
        [
            "federation.rounds=2",
            'vertical.test_missing=["mcar:0.0"]',
            "runs.0.params.stage1_rounds=1",
            "runs.0.params.stage1_passes=1",
            "runs.0.params.report_samples=[]",
        ],
    ),
    "fcms-alarm": ("fcm-alarm", ["federation.rounds=1"]),
}
"""Workload -> the preset and the ``--set`` overrides that cut it (its first run only)."""


def devices() -> list[str]:
    """The CPU, and CUDA where PyTorch finds it."""
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


def measure(workload: str, device: str, data_dir: Path) -> dict[str, Any]:
    """One run of ``workload`` on ``device``: its wall time and final metrics."""
    preset, overrides = WORKLOADS[workload]
    source = apply_overrides(resolve_experiment(preset), [*ONE_WORKER, *overrides, f"train.device={device}"])
    source["runs"] = source["runs"][:1]
    config = load_config(source)
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        results = run_experiment(config, Path(out), data_dir=data_dir)
        seconds = time.perf_counter() - start
    final = results["runs"][0]["final"]
    return {"seconds": round(seconds, 2), "accuracy": final["accuracy"], "final": final}


def compare(by_device: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """CPU seconds / CUDA seconds and whether the accuracies agree (nothing to compare without CUDA)."""
    if "cuda" not in by_device:
        return {"ratio_cpu_to_cuda": None, "accuracies_agree": None}
    cpu, cuda = by_device["cpu"], by_device["cuda"]
    return {
        "ratio_cpu_to_cuda": round(cpu["seconds"] / cuda["seconds"], 2),
        "accuracy_difference": round(abs(cpu["accuracy"] - cuda["accuracy"]), 4),
        "accuracies_agree": abs(cpu["accuracy"] - cuda["accuracy"]) <= TOLERANCE,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", action="append", choices=sorted(WORKLOADS), default=None)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    data_dir = args.data_dir or default_data_dir()
    results = {}
    for workload in args.workload or list(WORKLOADS):
        by_device = {device: measure(workload, device, data_dir) for device in devices()}
        results[workload] = {**by_device, **compare(by_device)}
    document = {
        "benchmark": "devices",
        "machine": machine(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "absent",
        "tolerance": TOLERANCE,
        "workloads": results,
    }
    emit(document, args.out)
    if any(r["accuracies_agree"] is False for r in results.values()):
        raise SystemExit("the CPU's and CUDA's final accuracies differ by more than the tolerance")


if __name__ == "__main__":
    main()
