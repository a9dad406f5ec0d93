"""Format numbers for the report's tables."""

from collections.abc import Mapping

from fedmosaic.report.series import mean_std

MISSING = "—"
"""Shown in place of a value that a run does not report."""


def format_metric(metrics: Mapping[str, float], metric: str) -> str:
    """Format ``metric`` with three decimals, as ``mean ± std`` when a std exists.

    Parameters
    ----------
    metrics : Mapping[str, float]
        A ``final`` or per-round ``metrics`` mapping.
    metric : str
        Metric name, without the ``_std`` suffix.

    Returns
    -------
    str
        E.g. ``"0.930"``, ``"0.600 ± 0.050"``, or :data:`MISSING`.
    """
    found = mean_std(metrics, metric)
    return MISSING if found is None else format_value(*found)


def format_value(value: float, std: float | None) -> str:
    """Format a metric value with three decimals, followed by `` ± std`` when given."""
    return f"{value:.3f}" if std is None else f"{value:.3f} ± {std:.3f}"


def format_bytes(count: int) -> str:
    """Format a byte count with a decimal unit, e.g. ``"123.5 kB"``."""
    if count < 1000:
        return f"{count} B"
    value = float(count)
    for unit in ("kB", "MB", "GB"):
        value /= 1000
        if value < 999.95:
            return f"{value:.1f} {unit}"
    return f"{value / 1000:.1f} TB"


def format_seconds(seconds: float) -> str:
    """Format a duration in seconds with two decimals, e.g. ``"3.20 s"``."""
    return f"{seconds:.2f} s"
