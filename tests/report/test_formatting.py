"""Specification of :mod:`fedmosaic.report.formatting`."""

import pytest

from fedmosaic.report.formatting import MISSING, format_bytes, format_metric, format_seconds


@pytest.mark.parametrize(
    ("metrics", "expected"),
    [
        ({"accuracy": 0.93}, "0.930"),
        ({"accuracy": 0.6, "accuracy_std": 0.05}, "0.600 ± 0.050"),
        ({"accuracy": 1}, "1.000"),
        ({"accuracy": 0.12345}, "0.123"),
        ({"loss": 0.25}, MISSING),
    ],
    ids=["value", "value-and-std", "integer", "rounded", "absent"],
)
def test_metrics_have_three_decimals_and_their_std_when_reported(
    metrics: dict[str, float], expected: str
) -> None:
    assert format_metric(metrics, "accuracy") == expected


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        (0, "0 B"),
        (999, "999 B"),
        (1000, "1.0 kB"),
        (123_456, "123.5 kB"),
        (999_960, "1.0 MB"),
        (2_500_000_000, "2.5 GB"),
        (3_000_000_000_000, "3.0 TB"),
    ],
)
def test_bytes_have_a_decimal_unit(count: int, expected: str) -> None:
    assert format_bytes(count) == expected


def test_seconds_have_two_decimals() -> None:
    assert format_seconds(3.2) == "3.20 s"
