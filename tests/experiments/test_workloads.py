"""Workloads: the data of an experiment laid out over clients."""

from pathlib import Path
from typing import Any

import pytest

from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.workloads import prepare_workload

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.mark.skipif(not (SHARED_DATA / "mnist").exists(), reason="MNIST files are not available")
def test_simpson_mnist_gives_one_client_per_shade_band_a_pretraining_sample_and_a_picture() -> None:
    config = load_config(
        {
            "name": "simpson",
            "data": {
                "dataset": "simpson-mnist",
                "data_dir": str(SHARED_DATA),
                "samples_per_client": 50,
                "pretrain_samples": 40,
            },
            "partition": {"num_clients": 5},
            "runs": [{"name": "FedAvg", "method": "fedavg"}],
        }
    )
    workload = prepare_workload(config)
    assert [len(c) for c in workload.clients] == [50] * 5
    assert workload.clients[0].x.shape[1:] == (3, 28, 28)
    assert workload.pretrain is not None
    assert len(workload.pretrain) == 40
    ((name, _, png),) = workload.figures
    assert png.startswith(b"\x89PNG")
    assert name == "simpson_samples"
    task = workload.jobs("federated", config)[0].task
    assert task.pretrain is workload.pretrain


@pytest.mark.skipif(not (SHARED_DATA / "mnist").exists(), reason="MNIST files are not available")
@pytest.mark.parametrize(("evaluate_on", "size"), [("test", 2163), ("validation", 60)])
def test_simpson_mnist_probes_colour_reliance_on_the_set_it_evaluates_on(evaluate_on: str, size: int) -> None:
    # Prepare
    config = load_config(
        {
            "name": "simpson",
            "data": {
                "dataset": "simpson-mnist",
                "data_dir": str(SHARED_DATA),
                "samples_per_client": 50,
                "pretrain_samples": 40,
                "validation_samples": 60,
                "evaluate_on": evaluate_on,
            },
            "partition": {"num_clients": 5},
            "runs": [{"name": "FedAvg", "method": "fedavg"}],
        }
    )
    # Execute
    workload = prepare_workload(config)
    task = workload.jobs("centralized", config)[0].task
    # Assert: the colour-swap probe holds the same digits as the evaluation set, in every setting
    (probe,) = task.probes
    assert len(workload.test) == len(probe.own) == len(probe.swapped) == size
    assert (probe.own.y == workload.test.y).all()


@pytest.mark.skipif(not (SHARED_DATA / "mnist").exists(), reason="MNIST files are not available")
def test_simpson_mnist_evaluated_on_both_sets_reports_the_validation_numbers_beside_the_tests() -> None:
    # Prepare
    config = load_config(
        {
            "name": "simpson",
            "data": {
                "dataset": "simpson-mnist",
                "data_dir": str(SHARED_DATA),
                "samples_per_client": 50,
                "pretrain_samples": 40,
                "validation_samples": 60,
                "evaluate_on": "both",
            },
            "partition": {"num_clients": 5},
            "runs": [{"name": "FedAvg", "method": "fedavg"}],
        }
    )
    # Execute
    workload = prepare_workload(config)
    task = workload.jobs("federated", config)[0].task
    # Assert: the task evaluates on the test set; the second probe holds the validation set and its swap
    swap, held_out = task.probes
    assert len(workload.test) == len(swap.own) == 2163
    assert held_out.prefix == "validation_"
    assert len(held_out.data) == len(held_out.swap.own) == 60
    assert (held_out.swap.own.y == held_out.data.y).all()


def test_concept_workloads_lay_out_clients_with_their_arrival_rounds() -> None:
    config = load_config(
        {
            "name": "asia",
            "data": {"dataset": "bnlearn", "network": "asia", "samples": 2000},
            "concepts": {"num_clients": 6, "initial_clients": 3, "join_round": 4},
            "runs": [{"name": "F-CMs", "method": "fcm"}],
        }
    )
    workload = prepare_workload(config)
    (job,) = workload.jobs("federated", config)
    assert job.schedule.available(1) == [0, 1, 2]
    assert job.schedule.available(4) == list(range(6))
    assert job.task.last_arrival == 4
    assert 0.7 < job.task.extras["bayes_optimal_accuracy"] <= 1.0
    assert len(workload.jobs("local", config)) == 6


def test_the_centralized_baseline_labels_exactly_the_union_of_the_clients_concepts() -> None:
    # Prepare: on asia the clients label the task's ancestors and one additional concept, not all 8 variables.
    config = load_config(
        {
            "name": "asia",
            "data": {"dataset": "bnlearn", "network": "asia", "samples": 2000},
            "runs": [{"name": "Centralized", "method": "fcm", "setting": "centralized"}],
        }
    )
    workload = prepare_workload(config)

    # Execute
    (central,) = workload.jobs("centralized", config)

    # Assert
    union = {name for client in workload.clients for name in client.train.names} | {workload.splits.task}
    pooled = central.task.clients[0]
    assert set(pooled.train.names) == set(pooled.val.names) == union
    assert union < set(workload.splits.train.names)
    assert set(pooled.confidence.names) == union
    assert len(pooled.train) == len(workload.splits.train)


def test_every_concept_run_records_what_a_linear_probe_reads_of_the_task_from_x() -> None:
    # Prepare: the same data with the task kept out of x, and encoded into it
    source: dict[str, Any] = {
        "name": "asia",
        "data": {"dataset": "bnlearn", "network": "asia", "samples": 2000, "noise_share": 0.0},
        "runs": [{"name": "F-CMs", "method": "fcm"}],
    }
    leaked = {**source, "data": {**source["data"], "leak_task": True}}

    # Execute
    extras = [
        prepare_workload(load_config(s)).jobs("federated", load_config(s))[0].task.extras for s in (source, leaked)
    ]

    # Assert: the probe lies under the Bayes ceiling without the task, and reads it once it is encoded
    assert 0.5 < extras[0]["probe_accuracy"] <= extras[0]["bayes_optimal_accuracy"] + 0.02
    assert extras[1]["probe_accuracy"] > extras[0]["probe_accuracy"] + 0.05
    assert extras[0]["input_latent_std"] == 1.0


def test_covering_every_node_makes_the_clients_label_the_whole_network() -> None:
    # Prepare
    source: dict[str, Any] = {
        "name": "asia",
        "data": {"dataset": "bnlearn", "network": "asia", "samples": 2000},
        "concepts": {"cover": "all"},
        "runs": [{"name": "F-CMs", "method": "fcm"}],
    }

    # Execute
    workload = prepare_workload(load_config(source))

    # Assert
    union = {name for client in workload.clients for name in client.train.names} | {workload.splits.task}
    assert union == set(workload.splits.train.names)
