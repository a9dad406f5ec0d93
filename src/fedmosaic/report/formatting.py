"""Format numbers for the report's tables."""

MISSING = "—"
"""Shown in place of a value that a run does not report."""


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
