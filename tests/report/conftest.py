"""A small synthetic ``results.json`` content shared by the report tests.

Three runs over three rounds:

* FedAvg (federated): round 2 is skipped, so it reports no metrics.
* FedProx (federated): also reports ``concept_accuracy``, in its last round
  and final metrics only.
* Local (local): reports ``accuracy_std`` and ``loss_std`` in every round and
  in its final metrics; it sends no bytes.
"""

import copy
from typing import Any

import pytest


def _round(
    number: int,
    metrics: dict[str, float],
    *,
    bytes_up: int = 123_456,
    bytes_down: int = 234_567,
    dropped: tuple[int, ...] = (),
    skipped_because: str | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "round": number,
        "status": "ok" if skipped_because is None else "skipped",
        "clients_sampled": 5,
        "replies": 5 - len(dropped),
        "dropped": list(dropped),
        "bytes_up": bytes_up,
        "bytes_down": bytes_down,
        "wall_time_s": 0.12,
        "metrics": metrics,
    }
    if skipped_because is not None:
        entry["reason"] = skipped_because
    return entry


@pytest.fixture(scope="session")
def results() -> dict[str, Any]:
    """The content of a ``results.json``. Tests must not modify it: deep-copy first."""
    return {
        "fedmosaic_version": "0.1.0",
        "experiment": "fedavg-digits",
        "description": "FedAvg vs FedProx vs local on scikit-learn digits",
        "seed": 0,
        "config": {
            "data": {"dataset": "digits", "partition": {"kind": "dirichlet", "alpha": 0.5}},
            "federation": {"rounds": 3, "clients": 5, "min_replies": 3},
            "model": {"hidden": [64, 32]},
        },
        "runs": [
            {
                "name": "FedAvg",
                "method": "fedavg",
                "setting": "federated",
                "history": [
                    _round(1, {"accuracy": 0.51, "loss": 1.3}, dropped=(3,)),
                    _round(
                        2,
                        {},
                        bytes_up=49_382,
                        dropped=(1, 4, 2),
                        skipped_because="2 replies < min_replies 3",
                    ),
                    _round(3, {"accuracy": 0.93, "loss": 0.25}),
                ],
                "final": {"accuracy": 0.93, "loss": 0.25},
                "bytes_up_total": 296_294,
                "bytes_down_total": 703_701,
                "wall_time_s": 3.2,
            },
            {
                "name": "FedProx",
                "method": "fedprox",
                "setting": "federated",
                "history": [
                    _round(1, {"accuracy": 0.48, "loss": 1.4}),
                    _round(2, {"accuracy": 0.80, "loss": 0.6}),
                    _round(3, {"accuracy": 0.91, "loss": 0.3, "concept_accuracy": 0.75}),
                ],
                "final": {"accuracy": 0.91, "loss": 0.3, "concept_accuracy": 0.75},
                "bytes_up_total": 370_368,
                "bytes_down_total": 703_701,
                "wall_time_s": 3.456,
            },
            {
                "name": "Local",
                "method": "fedavg",
                "setting": "local",
                "history": [
                    _round(
                        number,
                        {"accuracy": accuracy, "accuracy_std": std, "loss": loss, "loss_std": 0.1},
                        bytes_up=0,
                        bytes_down=0,
                    )
                    for number, accuracy, std, loss in [
                        (1, 0.40, 0.10, 1.6),
                        (2, 0.55, 0.07, 1.2),
                        (3, 0.60, 0.05, 1.0),
                    ]
                ],
                "final": {"accuracy": 0.6, "accuracy_std": 0.05, "loss": 1.0, "loss_std": 0.1},
                "bytes_up_total": 0,
                "bytes_down_total": 0,
                "wall_time_s": 0.5,
            },
        ],
    }


@pytest.fixture(scope="session")
def concept_results(results: dict[str, Any]) -> dict[str, Any]:
    """An F-CMs ``results.json`` on asia: one federated run with its graph, registry and intervention curves.

    Its graph has ``smoke -> lung -> either -> dysp`` (true edges),
    ``dysp -> bronc`` (reversed: the truth has ``bronc -> dysp``) and
    ``asia -> lung`` (extra); the true ``smoke -> bronc`` is missing.
    Client 0 joined at round 1 and labels smoke and lung, client 1 joined
    at round 2 and labels every node. Tests must not modify it.
    """
    parents = {
        "asia": [],
        "smoke": [],
        "lung": ["asia", "smoke"],
        "either": ["lung"],
        "bronc": ["dysp"],
        "dysp": ["either"],
    }
    run = copy.deepcopy(results["runs"][1])
    run.update(
        name="F-CMs",
        method="fcm",
        final={**run["final"], "bayes_optimal_accuracy": 0.857, "coverage": 1.0},
        artifacts={
            "graph": {
                "nodes": sorted(parents),
                "task": "dysp",
                "parents": parents,
                "cardinalities": dict.fromkeys(parents, 2),
            },
            "registry": {
                "0": {"concepts": ["smoke", "lung"], "joined": 1},
                "1": {"concepts": ["asia", "smoke", "lung", "either", "bronc"], "joined": 2},
            },
            "topological": [0.80, 0.82, 0.85],
            "random": [0.80, 0.81, 0.85],
            "topological_clean": [0.84, 0.85, 0.857],
            "random_clean": [0.84, 0.84, 0.857],
        },
    )
    return {
        **copy.deepcopy(results),
        "experiment": "fcm-asia",
        "config": {"data": {"dataset": "bnlearn", "network": "asia"}, "runs": [{"name": "F-CMs", "method": "fcm"}]},
        "runs": [run],
    }
