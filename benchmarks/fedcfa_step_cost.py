"""FedCFA's cost per local step relative to FedAvg's, measured side by side in one run.

Both train the same model on the same batches (batch 128, SGD): the MLP
784-200-200-10 on 28x28 images, or with ``--model resnet18`` the CIFAR
ResNet-18 on 32x32 colour images, cut after ``layer1`` as the fedcfa-cifar
preset runs it; FedCFA's step adds the counterfactual samples (scores from a
frozen copy of the received model, encoded global means, two top-k
selections) and the factor-decorrelation term. The steps are interleaved in
blocks, and the ratio of the median step times is printed, with what one
round of the fedcfa-cifar preset costs at that rate (12 clients of 833
images: 7 steps each).

Usage: python benchmarks/fedcfa_step_cost.py [--model mlp|resnet18] [--threads 1] [--blocks 15] [--out FILE]
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
from fedmosaic.methods.horizontal.fedcfa.objective import CounterfactualObjective, frozen_copy
from fedmosaic.methods.horizontal.fedcfa.params import FedCFAParams
from fedmosaic.methods.horizontal.fedcfa.split import default_split, split_model
from fedmosaic.methods.horizontal.models import ModelParams, build_model
from fedmosaic.methods.train_params import TrainParams
from fedmosaic.methods.training import LossFn, cross_entropy_loss, make_optimizer

BATCH = 128
WORKLOADS = {
    "mlp": (ModelParams(hidden=[200, 200]), (1, 28, 28), 20, "MLP 784-200-200-10"),
    "resnet18": (ModelParams(kind="resnet18"), (3, 32, 32), 2, "ResNet-18 (CIFAR variant) on 32x32 colour images"),
}
"""``--model`` -> the model, one example's shape, the steps of a block and the workload's name."""
CIFAR_ROUND_STEPS = 12 * 7
"""Local steps of one fedcfa-cifar round: 20% of 60 clients, 50,000 / 60 images each at batch 128, one epoch."""


def _losses(model: ModelParams, x_shape: tuple[int, ...]) -> dict[str, tuple[torch.nn.Module, LossFn]]:
    generator = torch.Generator().manual_seed(0)
    avg_x = torch.rand(60, *x_shape, generator=generator)
    avg_y = torch.softmax(torch.randn(60, 10, generator=generator), dim=1)
    build = partial(build_model, model, x_shape, 10)
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
    parser.add_argument("--model", choices=sorted(WORKLOADS), default="mlp")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--blocks", type=int, default=15)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, shape, steps, name = WORKLOADS[args.model]
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(BATCH * steps, *shape, generator=generator)
    y = torch.randint(0, 10, (len(x),), generator=generator)
    runs = _losses(model, shape)
    optimizers = {
        k: make_optimizer(m, TrainParams(batch_size=BATCH, lr=0.01, momentum=0.9)) for k, (m, _) in runs.items()
    }

    def block(kind: str) -> float:
        model, loss_fn = runs[kind]
        start = time.perf_counter()
        for i in range(steps):
            batch = slice(i * BATCH, (i + 1) * BATCH)
            optimizers[kind].zero_grad(set_to_none=True)
            loss_fn(model, x[batch], y[batch]).backward()
            optimizers[kind].step()
        return (time.perf_counter() - start) / steps

    for kind in runs:
        block(kind)  # warm-up
    times: dict[str, list[float]] = {kind: [] for kind in runs}
    for _ in range(args.blocks):
        for kind in runs:
            times[kind].append(block(kind))
    median = {kind: statistics.median(values) for kind, values in times.items()}
    emit(
        {
            "benchmark": "fedcfa_step_cost",
            "workload": f"{name}, batch 128, SGD; medians of {args.blocks} blocks of {steps} steps, {args.threads} threads",
            "fedavg_ms": 1e3 * median["fedavg"],
            "fedcfa_ms": 1e3 * median["fedcfa"],
            "fedcfa_over_fedavg": median["fedcfa"] / median["fedavg"],
            "cifar_round_minutes": {kind: CIFAR_ROUND_STEPS * value / 60 for kind, value in median.items()},
            "machine": machine(),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
