"""FedCFA's cost per local step relative to FedAvg's, measured side by side in one run.

Both train the same MLP (784-200-200-10, batch 128, SGD) on the same batches;
FedCFA's step adds the counterfactual samples (scores from a frozen copy of
the received model, encoded global means, two top-k selections) and the
factor-decorrelation term. The steps are interleaved, 15 blocks of 20 steps
each, and the ratio of the median step times is printed.

Usage: python benchmarks/fedcfa_step_cost.py [--threads 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import statistics
import time
from functools import partial
from pathlib import Path

import torch
from _common import emit, machine

from fedmosaic.methods.arrays import seeded
from fedmosaic.methods.horizontal.fedcfa import FedCFAParams, split_model
from fedmosaic.methods.horizontal.fedcfa.objective import CounterfactualObjective, frozen_copy
from fedmosaic.methods.horizontal.fedcfa.split import default_split
from fedmosaic.methods.horizontal.models import ModelParams, build_model
from fedmosaic.methods.training import LossFn, TrainParams, cross_entropy_loss, make_optimizer

BATCH = 128
BLOCK = 20


def _losses(x_shape: tuple[int, ...]) -> dict[str, tuple[torch.nn.Module, LossFn]]:
    generator = torch.Generator().manual_seed(0)
    avg_x = torch.rand(60, *x_shape, generator=generator)
    avg_y = torch.softmax(torch.randn(60, 10, generator=generator), dim=1)
    build = partial(build_model, ModelParams(hidden=[200, 200]), x_shape, 10)
    fedavg = seeded(0, build)
    fedcfa = seeded(0, build)
    split = default_split(fedcfa)
    _, decoder = split_model(fedcfa, split)
    objective = CounterfactualObjective(
        split, frozen_copy(decoder), avg_x, avg_y, FedCFAParams(), torch.Generator().manual_seed(1)
    )
    return {"fedavg": (fedavg, cross_entropy_loss), "fedcfa": (fedcfa, objective)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(BATCH * BLOCK, 1, 28, 28, generator=generator)
    y = torch.randint(0, 10, (len(x),), generator=generator)
    runs = _losses((1, 28, 28))
    optimizers = {
        k: make_optimizer(m, TrainParams(batch_size=BATCH, lr=0.01, momentum=0.9)) for k, (m, _) in runs.items()
    }

    def block(kind: str) -> float:
        model, loss_fn = runs[kind]
        start = time.perf_counter()
        for i in range(BLOCK):
            batch = slice(i * BATCH, (i + 1) * BATCH)
            optimizers[kind].zero_grad(set_to_none=True)
            loss_fn(model, x[batch], y[batch]).backward()
            optimizers[kind].step()
        return (time.perf_counter() - start) / BLOCK

    for kind in runs:
        block(kind)  # warm-up
    times: dict[str, list[float]] = {kind: [] for kind in runs}
    for _ in range(15):
        for kind in runs:
            times[kind].append(block(kind))
    median = {kind: statistics.median(values) for kind, values in times.items()}
    emit(
        {
            "benchmark": "fedcfa_step_cost",
            "workload": "MLP 784-200-200-10, batch 128, SGD; medians of 15 blocks of 20 steps",
            "fedavg_ms": 1e3 * median["fedavg"],
            "fedcfa_ms": 1e3 * median["fedcfa"],
            "fedcfa_over_fedavg": median["fedcfa"] / median["fedavg"],
            "machine": machine(),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
