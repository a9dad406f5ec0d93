"""Specification of :mod:`fedmosaic.report.formatting`."""

import pytest

from fedmosaic.report.formatting import format_bytes, format_seconds


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
