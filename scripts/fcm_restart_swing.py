"""Why a restarted Adam makes F-CMs swing: the global model's round-to-round steps, regime by regime.

Runs the cut-down insurance CGM case of ``tests/methods/concepts/test_regime.py``
(6 clients of about 330 rows, 3 joining at round 2, 18 rounds, Adam lr 0.01,
batch 512, 2 local epochs) under several regimes, and records for each round
the validation task loss and the step the global model took: its root mean
square over every parameter, and the cosine between this round's step and
the last one's (near -1: the model goes back where it came from, a period-2
swing; near +1: it keeps going one way). The centralized rows train one
model on all the rows with the batch as large as the data, so that each
round is the same two full-batch steps of a restarted Adam with no averaging
at all.

Usage::

    python scripts/fcm_restart_swing.py > docs/results/fcm/restart-swing.json
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from itertools import pairwise
from typing import Any

import numpy as np

from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.job import Job
from fedmosaic.experiments.workloads import ConceptWorkload, prepare_workload
from fedmosaic.federation import Federation, InProcessGrid, RoundRecord
from fedmosaic.methods.arrays import to_array
from fedmosaic.methods.concepts.oscillation import alternating_rounds
from fedmosaic.methods.concepts.server import FCMServer
from fedmosaic.methods.registry import METHODS
from fedmosaic.methods.train_params import TrainParams

COMMAND = "python scripts/fcm_restart_swing.py > docs/results/fcm/restart-swing.json"
ROUNDS = 18
SOURCE: dict[str, Any] = {
    "name": "restart-swing",
    "seed": 0,
    "data": {"dataset": "bnlearn", "network": "insurance", "samples": 2800},
    "concepts": {"num_clients": 6, "initial_clients": 3, "join_round": 2},
    "federation": {"rounds": ROUNDS},
    "runs": [{"name": "F-CMs", "method": "fcm", "params": {"patience": 0}}],
}
TRAIN: dict[str, Any] = {"epochs": 2, "batch_size": 512, "optimizer": "adam", "lr": 0.01}
REGIMES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("federated", "cgm", "Adam afresh each round", {"optimizer_state": "fresh"}),
    ("federated", "cgm", "Adam kept across rounds", {"optimizer_state": "kept"}),
    ("federated", "cgm", "Adam afresh, lr 0.001", {"optimizer_state": "fresh", "lr": 0.001}),
    ("federated", "cbm", "Adam afresh each round", {"optimizer_state": "fresh"}),
    ("federated", "cbm", "Adam kept across rounds", {"optimizer_state": "kept"}),
    ("centralized", "cgm", "Adam afresh, full batch", {"optimizer_state": "fresh", "batch_size": 1_000_000}),
    ("centralized", "cgm", "Adam kept, full batch", {"optimizer_state": "kept", "batch_size": 1_000_000}),
]
"""(setting, family, regime, [train] overrides) of each row."""


def run_regime(job: Job, family: str, train: dict[str, Any]) -> dict[str, Any]:
    """One cut-down run: per round, the validation task loss and the global model's step."""
    method = METHODS["fcm"]
    params = method.params.model_validate({"patience": 0, "model": {"family": family}})
    server, factory = method.build(replace(job.task, train=TrainParams.model_validate(train)), params)
    assert isinstance(server, FCMServer)
    models: list[dict[str, np.ndarray]] = []
    losses: list[float] = []

    def record(entry: RoundRecord) -> None:
        losses.append(float(entry.metrics["val_task_loss"]))
        assert server.model is not None
        models.append({k: to_array(v).astype(np.float64) for k, v in server.model.state_dict().items()})

    Federation(server, InProcessGrid(factory, 0), job.schedule, seed=0, rounds=ROUNDS).run(on_round=record)
    steps = [_step(before, after) for before, after in pairwise(models)]
    return {
        "val_task_loss": losses,
        "step_rms": [None if s is None else float(np.sqrt(np.mean(s**2))) for s in steps],
        "step_cosine": [_cosine(a, b) for a, b in pairwise(steps)],
        "alternating_rounds": alternating_rounds(losses),
    }


def _step(before: dict[str, np.ndarray], after: dict[str, np.ndarray]) -> np.ndarray | None:
    """The change of every parameter from one round to the next; None when the model's architecture changed."""
    if before.keys() != after.keys() or any(before[k].shape != after[k].shape for k in before):
        return None
    return np.concatenate([(after[k] - before[k]).ravel() for k in sorted(before)])


def _cosine(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    if a is None or b is None or len(a) != len(b):
        return None
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / norm if norm > 0 else None


def main() -> None:
    """Run every regime and print the JSON document."""
    config = load_config(SOURCE)
    workload = prepare_workload(config)
    assert isinstance(workload, ConceptWorkload)
    jobs = {setting: workload.jobs(setting, config)[0] for setting in ("federated", "centralized")}
    rows = []
    for setting, family, regime, overrides in REGIMES:
        result = run_regime(jobs[setting], family, {**TRAIN, **overrides})
        rows.append({"setting": setting, "family": family, "regime": regime, "train": overrides, **result})
        print(f"{setting} {family} {regime}: {result['alternating_rounds']} alternating", file=sys.stderr)
    document = {"command": COMMAND, "source": SOURCE, "train": TRAIN, "rows": rows}
    print(json.dumps(document, indent=1))


if __name__ == "__main__":
    main()
