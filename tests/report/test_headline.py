"""Specification of :mod:`fedmosaic.report.headline`."""

from typing import Any

import pytest

from fedmosaic.report.headline import format_headline, headline_metrics, label, task_kind


@pytest.mark.parametrize(
    ("metric", "expected"),
    [("accuracy", "Task accuracy (%)"), ("loss", "Loss"), ("accuracy_mcar5", "accuracy_mcar5"), ("mine", "mine")],
)
def test_known_metrics_have_a_human_header_with_their_unit_others_keep_their_key(metric: str, expected: str) -> None:
    assert label(metric) == expected


@pytest.mark.parametrize(
    ("metrics", "metric", "expected"),
    [
        ({"accuracy": 0.9234}, "accuracy", "92.3"),
        ({"accuracy_keep2": 0.5, "accuracy_keep2_std": 0.01}, "accuracy_keep2", "50.0 ± 1.0"),
        ({"loss": 1.23456, "loss_std": 0.1}, "loss", "1.235 ± 0.100"),
        ({}, "loss", "—"),
    ],
)
def test_values_are_in_percent_for_accuracies_with_std_when_reported(
    metrics: dict[str, float], metric: str, expected: str
) -> None:
    assert format_headline(metrics, metric) == expected


def test_the_kind_of_task_comes_from_the_configured_methods(results: dict[str, Any]) -> None:
    # Prepare
    def with_methods(*methods: str) -> dict[str, Any]:
        return {**results, "config": {"runs": [{"name": m, "method": m} for m in methods]}}

    # Execute / Assert
    assert task_kind(with_methods("fedavg", "fcm")) == "concepts"
    assert task_kind(with_methods("false-vfl", "vfl-local")) == "vertical"
    assert task_kind(with_methods("fedcfa")) == "classification"
    assert task_kind(results) == "classification"


def test_headline_metrics_are_those_of_the_kind_that_some_run_reports(results: dict[str, Any]) -> None:
    assert headline_metrics(results, "classification") == ["accuracy", "loss"]
    assert headline_metrics(results, "concepts") == ["accuracy", "concept_accuracy"]
