"""Specification of :mod:`fedmosaic.report.series`."""

import copy
from typing import Any

import numpy as np
import pytest

from fedmosaic.report.series import (
    final_by_run,
    final_metric_names,
    mean_std,
    metric_series_by_run,
    traffic_by_run,
)


def test_final_metric_names_are_listed_once_in_order_of_appearance_without_std_keys(
    results: dict[str, Any],
) -> None:
    # Execute
    names = final_metric_names(results)

    # Assert
    assert names == ["accuracy", "loss", "concept_accuracy"]


@pytest.mark.parametrize(
    ("metrics", "expected"),
    [
        ({"accuracy": 0.9}, (0.9, None)),
        ({"accuracy": 0.9, "accuracy_std": 0.1}, (0.9, 0.1)),
        ({"loss": 0.3, "loss_std": 0.1}, None),
    ],
    ids=["value", "value-and-std", "absent"],
)
def test_mean_std_pairs_a_metric_with_its_std(
    metrics: dict[str, float], expected: tuple[float, float | None] | None
) -> None:
    assert mean_std(metrics, "accuracy") == expected


def test_series_leave_out_rounds_without_the_metric(results: dict[str, Any]) -> None:
    # Execute
    fedavg = metric_series_by_run(results, "accuracy")["FedAvg"]

    # Assert: round 2 was skipped
    np.testing.assert_array_equal(fedavg.rounds, [1, 3])
    np.testing.assert_array_equal(fedavg.values, [0.51, 0.93])
    assert np.isnan(fedavg.stds).all()


def test_series_carry_the_std_of_each_round(results: dict[str, Any]) -> None:
    # Execute
    local = metric_series_by_run(results, "accuracy")["Local"]

    # Assert
    np.testing.assert_array_equal(local.rounds, [1, 2, 3])
    np.testing.assert_array_equal(local.stds, [0.10, 0.07, 0.05])


def test_series_are_given_only_for_runs_whose_rounds_report_the_metric(results: dict[str, Any]) -> None:
    # Execute
    by_run = metric_series_by_run(results, "concept_accuracy")

    # Assert
    assert list(by_run) == ["FedProx"]
    np.testing.assert_array_equal(by_run["FedProx"].rounds, [3])


def test_final_values_are_given_only_for_runs_that_report_the_metric(results: dict[str, Any]) -> None:
    # Execute
    accuracy = final_by_run(results, "accuracy")
    concept = final_by_run(results, "concept_accuracy")

    # Assert
    assert accuracy == {"FedAvg": (0.93, None), "FedProx": (0.91, None), "Local": (0.6, 0.05)}
    assert concept == {"FedProx": (0.75, None)}


def test_traffic_is_given_per_round_for_runs_with_rounds(results: dict[str, Any]) -> None:
    # Prepare
    no_rounds = copy.deepcopy(results)
    no_rounds["runs"][2]["history"] = []

    # Execute
    by_run = traffic_by_run(no_rounds)

    # Assert
    assert list(by_run) == ["FedAvg", "FedProx"]
    np.testing.assert_array_equal(by_run["FedAvg"].rounds, [1, 2, 3])
    np.testing.assert_array_equal(by_run["FedAvg"].up, [123_456, 49_382, 123_456])
    np.testing.assert_array_equal(by_run["FedAvg"].down, [234_567] * 3)
