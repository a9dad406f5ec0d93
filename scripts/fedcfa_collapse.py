"""Why FedCFA falls to chance on Simpson-MNIST: measurements inside the model, round by round.

In ``fedcfa-simpson``'s setting (seed 0, all 5 clients every round), each
run below trains for a few rounds; after every round the script records, on
the test set, the global model's accuracy, the share of its predictions that
are class 1, the share of the decoder's hidden pre-activations that are
positive (its first layer after FedCFA's split; 0 means a constant output)
and the share of the encoder's factors that are never active, and the same
accuracy and active share for each client's model before averaging. A
second part takes FedCFA's round-1 global model and average dataset (round
2's start) and, for every client's data, measures the counterfactual samples
the round-2 client would build: the received model's accuracy on the real,
positive and negative samples, the mean absolute score of the replaced
factors, how often the donor's value is the larger one, and the sum over
the decoder's hidden units of minus the loss's gradient with respect to
their pre-activations (per sample, for the preset's decoder
Linear-ReLU-Linear; negative: a gradient step lowers them).

Usage: python scripts/fedcfa_collapse.py [--data-dir DATA] [--rounds 10] [--threads 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn import functional as F

from fedmosaic.experiments.config import FederationSection, load_config
from fedmosaic.experiments.inprocess_grid import make_grid
from fedmosaic.experiments.presets import preset_source
from fedmosaic.experiments.workloads import prepare_simpson
from fedmosaic.federation import Grid, Message, RoundContext, Schedule
from fedmosaic.methods.arrays import load_arrays
from fedmosaic.methods.horizontal.fedcfa.average_dataset import AVERAGE_X, AVERAGE_Y, without_means
from fedmosaic.methods.horizontal.fedcfa.counterfactual import (
    SelectionRule,
    counterfactuals,
    factor_scores,
    select_factors,
)
from fedmosaic.methods.horizontal.fedcfa.params import FedCFAParams
from fedmosaic.methods.horizontal.fedcfa.split import split_model
from fedmosaic.methods.horizontal.models import Classifier
from fedmosaic.methods.horizontal.task import HorizontalTask
from fedmosaic.methods.registry import get_method

# The benchmarks' helpers (data folder, machine facts, JSON output) serve this investigation too.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _common import default_data_dir, emit, machine


@dataclass(frozen=True)
class LayerNormMLP:
    """The preset's MLP with a LayerNorm before each ReLU: a diagnostic architecture only.

    The pre-activations are renormalised, as BatchNorm does in the reference's ResNet-18 decoder.
    """

    inputs: int
    hidden: tuple[int, ...]
    outputs: int

    def __call__(self) -> nn.Module:
        layers: list[nn.Module] = [nn.Flatten()]
        width = self.inputs
        for size in self.hidden:
            layers += [nn.Linear(width, size), nn.LayerNorm(size), nn.ReLU()]
            width = size
        layers.append(nn.Linear(width, self.outputs))
        return nn.Sequential(*layers)


@dataclass(frozen=True)
class LayerNormTask(HorizontalTask):
    """The same task on :class:`LayerNormMLP`."""

    def model_factory(self) -> Classifier:
        shape = self.test.x.shape[1:]
        return LayerNormMLP(int(np.prod(shape)), tuple(self.model.hidden), self.test.num_classes)  # type: ignore[return-value]


#: (name, method, method parameters, layer-normalised MLP)
RUNS: tuple[tuple[str, str, dict[str, Any], bool], ...] = (
    ("FedAvg", "fedavg", {}, False),
    ("FedAvg, decoder step x11", "fedavg-decoder-matched", {}, False),
    ("FedCFA", "fedcfa", {}, False),
    ("FedCFA, no FDC", "fedcfa", {"fdc_weight": 0.0}, False),
    ("FedCFA, weights 1:0.2:0.2", "fedcfa", {"positive_weight": 0.2, "negative_weight": 0.2}, False),
    (
        "FedCFA, magnitude scoring",
        "fedcfa",
        {"positive_rule": "magnitude-smallest", "negative_rule": "magnitude-largest"},
        False,
    ),
    ("FedAvg, LayerNorm MLP", "fedavg", {}, True),
    ("FedCFA, LayerNorm MLP", "fedcfa", {}, True),
)


class _Recorder(Grid):
    """Wraps a grid and keeps the last replies (the clients' models before averaging)."""

    def __init__(self, grid: Grid) -> None:
        self.grid = grid
        self.replies: dict[int, Message] = {}

    def send_and_receive(
        self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int]
    ) -> dict[int, Message]:
        self.replies = self.grid.send_and_receive(messages, rnd, failing)
        return self.replies


def _decoder_input_layer(model: nn.Module) -> tuple[nn.Module, Callable[[Tensor], Tensor]]:
    """The encoder at FedCFA's split and the decoder's hidden pre-activations."""
    encoder, decoder = split_model(model)
    hidden = decoder[0] if not isinstance(decoder[1], nn.LayerNorm) else nn.Sequential(decoder[0], decoder[1])
    return encoder, hidden


@torch.no_grad()
def _inside(model: nn.Module, x: Tensor, y: Tensor) -> dict[str, float]:
    model.eval()
    encoder, hidden = _decoder_input_layer(model)
    z = encoder(x)
    prediction = model(x).argmax(dim=1)
    return {
        "accuracy": float((prediction == y).float().mean()),
        "predicted_1": float((prediction == 1).float().mean()),
        "decoder_active": float((hidden(z) > 0).float().mean()),
        "encoder_dead": float((z.max(dim=0).values <= 0).float().mean()),
    }


def _rounds(task: HorizontalTask, method: str, params: dict[str, Any], seed: int, rounds: int) -> list[dict]:
    built = get_method(method)
    server, clients = built.build(task, built.params(**params))
    server.initialize(seed)
    model = task.model_factory()()
    x, y = torch.from_numpy(task.test.x), torch.from_numpy(task.test.y)
    everyone = list(range(len(task.clients)))
    history = []
    with make_grid(FederationSection(), clients, seed, Schedule(num_clients=len(everyone)), cores=1) as grid:
        recorder = _Recorder(grid)
        for rnd in range(1, rounds + 1):
            server.run_round(RoundContext(round=rnd, clients=everyone, seed=seed, grid=recorder))
            local = []
            for client in everyone:
                load_arrays(model, without_means(recorder.replies[client].arrays))
                local.append(_inside(model, x, y))
            load_arrays(model, server.params)
            row: dict[str, Any] = {
                "round": rnd,
                **_inside(model, x, y),
                "local_accuracy": [m["accuracy"] for m in local],
                "local_decoder_active": [m["decoder_active"] for m in local],
            }
            history.append(row)
            print(f"  round {rnd}: {row}", flush=True)
    return history


def _counterfactual_probe(task: HorizontalTask, seed: int, scoring: str) -> list[dict[str, Any]]:
    """Round 2's counterfactual samples of every client, seen by the round-1 global model."""
    built = get_method("fedcfa")
    rules: tuple[SelectionRule, SelectionRule] = (
        ("magnitude-smallest", "magnitude-largest") if scoring == "magnitude" else ("signed-smallest", "signed-largest")
    )
    params = FedCFAParams(positive_rule=rules[0], negative_rule=rules[1])
    server, clients = built.build(task, params)
    server.initialize(seed)
    everyone = list(range(len(task.clients)))
    with make_grid(FederationSection(), clients, seed, Schedule(num_clients=len(everyone)), cores=1) as grid:
        server.run_round(RoundContext(round=1, clients=everyone, seed=seed, grid=grid))
    model = task.model_factory()()
    load_arrays(model, server.params)
    model.eval()
    encoder, decoder = split_model(model)
    average_x = torch.from_numpy(server.average[AVERAGE_X])
    average_y = torch.from_numpy(server.average[AVERAGE_Y])
    generator = torch.Generator().manual_seed(seed)
    out = []
    for data in task.clients:
        x, y = torch.from_numpy(data.x), torch.from_numpy(data.y)
        with torch.no_grad():
            z, donors = encoder(x), encoder(average_x)
        scores = factor_scores(decoder, z, y)
        magnitude = scores.abs()
        drawn = torch.randint(len(average_x), (len(y),), generator=generator)
        k = params.replaced(z.shape[1])
        samples = counterfactuals(z, y, donors[drawn], average_y[drawn], scores, k, rules)
        low, high = (select_factors(scores, k, rule) for rule in rules)
        donor = donors[drawn]
        row: dict[str, Any] = {
            "average_x_shape": list(average_x.shape),
            "average_y_shape": list(average_y.shape),
            "factor_mean": float(z.mean()),
            "donor_factor_mean": float(donors.mean()),
            "negative_target_mean": samples.negative_target.mean(dim=0).tolist(),
            "mean_abs_score_all": float(magnitude.mean()),
            "positive_mean_abs_score_replaced": float(magnitude[low].mean()),
            "negative_mean_abs_score_replaced": float(magnitude[high].mean()),
            "positive_replaced_donor_larger": float((donor > z)[low].float().mean()),
            "negative_replaced_donor_larger": float((donor > z)[high].float().mean()),
        }
        targets = {"real": F.one_hot(y, 2).float(), "positive": F.one_hot(y, 2).float()}
        targets["negative"] = samples.negative_target
        for name, factors in (("real", z), ("positive", samples.positive), ("negative", samples.negative)):
            with torch.no_grad():
                pre = decoder[0](factors)
                probabilities = decoder(factors).softmax(dim=1)
                delta = ((probabilities - targets[name]) @ decoder[-1].weight) * (pre > 0)
            row[f"{name}_accuracy"] = float((probabilities.argmax(dim=1) == y).float().mean())
            row[f"{name}_push"] = float(-delta.sum(dim=1).mean())
        out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = load_config({**preset_source("fedcfa-simpson"), "seed": args.seed})
    workload = prepare_simpson(config, data_dir=args.data_dir)
    task = workload.jobs("federated", config)[0].task
    layer_norm = LayerNormTask(task.clients, task.test, task.model, task.train, task.pretrain, task.probes)
    runs = []
    for name, method, params, normalised in RUNS:
        print(name, flush=True)
        runs.append(
            {
                "name": name,
                "method": method,
                "params": params,
                "history": _rounds(layer_norm if normalised else task, method, params, args.seed, args.rounds),
            }
        )
    probe = {scoring: _counterfactual_probe(task, args.seed, scoring) for scoring in ("signed", "magnitude")}
    emit(
        {
            "benchmark": "fedcfa_collapse",
            "machine": machine(),
            "seed": args.seed,
            "rounds": args.rounds,
            "runs": runs,
            "round_2_counterfactuals": probe,
        },
        args.out,
    )


if __name__ == "__main__":
    main()
