"""F-CMs' default training regime does not make a federation swing from round to round.

Insurance CGM, cut down: 6 clients of about 330 rows (fewer than the
presets' batch of 512, so each takes one full-batch step per epoch, as the
presets' 20 clients of 350 rows do), 18 rounds. With an optimizer started
afresh every round, the validation task loss goes high and low by turns from
about round 6; with F-CMs' default (each client's optimizer kept across
rounds, what ``train.optimizer_state`` unset means for F-CMs) it does not.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.job import Job
from fedmosaic.experiments.presets import preset_source
from fedmosaic.experiments.workloads import ConceptWorkload, prepare_workload
from fedmosaic.federation import Federation, InProcessGrid
from fedmosaic.methods.concepts.oscillation import alternating_rounds, oscillates
from fedmosaic.methods.registry import METHODS
from fedmosaic.methods.train_params import TrainParams

SOURCE: dict[str, Any] = {
    "name": "regime",
    "seed": 0,
    "data": {"dataset": "bnlearn", "network": "insurance", "samples": 2800},
    "concepts": {"num_clients": 6, "initial_clients": 3, "join_round": 2},
    "federation": {"rounds": 18},
    "runs": [{"name": "F-CMs", "method": "fcm", "params": {"patience": 0, "model": {"family": "cgm"}}}],
}


@pytest.fixture(scope="module")
def job() -> Job:
    """The cut-down federation (its data prepared once)."""
    config = load_config(SOURCE)
    workload = prepare_workload(config)
    assert isinstance(workload, ConceptWorkload)
    return workload.jobs("federated", config)[0]


@pytest.fixture(scope="module")
def preset_train() -> dict[str, Any]:
    """The ``[train]`` section of the F-CMs presets, ``optimizer_state`` left unset (F-CMs' default)."""
    train: dict[str, Any] = preset_source("fcm-insurance")["train"]
    assert "optimizer_state" not in train
    return train


def _task_losses(job: Job, train: dict[str, Any]) -> list[float]:
    method = METHODS["fcm"]
    task = replace(job.task, train=TrainParams.model_validate(train))
    server, factory = method.build(task, method.params.model_validate(SOURCE["runs"][0]["params"]))
    federation = Federation(
        server, InProcessGrid(factory, 0), job.schedule, seed=0, rounds=SOURCE["federation"]["rounds"]
    )
    return [record.metrics["val_task_loss"] for record in federation.run()]


def test_the_default_regime_does_not_oscillate_on_insurance_cgm(job: Job, preset_train: dict[str, Any]) -> None:
    # Execute
    losses = _task_losses(job, preset_train)

    # Assert
    assert not oscillates(losses), f"{alternating_rounds(losses)} alternating rounds: {losses}"


def test_the_default_regime_is_the_optimizer_kept_across_rounds(job: Job, preset_train: dict[str, Any]) -> None:
    # Execute
    default = _task_losses(job, preset_train)
    kept = _task_losses(job, {**preset_train, "optimizer_state": "kept"})

    # Assert: the same run, loss for loss
    assert default == kept


def test_an_optimizer_started_afresh_every_round_oscillates_there(job: Job, preset_train: dict[str, Any]) -> None:
    # Prepare: the same regime, except the optimizer state
    fresh = {**preset_train, "optimizer_state": "fresh"}

    # Execute
    losses = _task_losses(job, fresh)

    # Assert: what the first test guards against
    assert oscillates(losses), f"{alternating_rounds(losses)} alternating rounds: {losses}"
