"""Progress reporting of a running experiment."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from fedmosaic.federation import RoundRecord


class ProgressSink(Protocol):
    """Receives progress events; the command line shows them with rich."""

    def start_point(self, index: int, total: int, label: str) -> None:
        """Point ``index`` of ``total`` of a grid starts (``label`` names its values)."""

    def start_run(self, name: str, total_rounds: int) -> None:
        """A run of ``total_rounds`` rounds (summed over its jobs) starts."""

    def advance(self, name: str, record: RoundRecord) -> None:
        """One round of run ``name`` finished."""

    def finish_run(self, name: str) -> None:
        """Run ``name`` finished."""


class SilentProgress:
    """A progress sink that shows nothing (library use and tests)."""

    def start_point(self, index: int, total: int, label: str) -> None:
        """Ignore the event."""

    def start_run(self, name: str, total_rounds: int) -> None:
        """Ignore the event."""

    def advance(self, name: str, record: RoundRecord) -> None:
        """Ignore the event."""

    def finish_run(self, name: str) -> None:
        """Ignore the event."""


class LineProgress:
    """Prints one line per event (for logs and streamed deployments, where bars cannot redraw).

    Parameters
    ----------
    write : callable str -> None, default print with flush
        Where each line goes.
    """

    def __init__(self, write: Callable[[str], None] | None = None) -> None:
        self._write = write or (lambda line: print(line, flush=True))
        self._totals: dict[str, int] = {}

    def start_point(self, index: int, total: int, label: str) -> None:
        """Announce a grid point."""
        self._write(f"grid point {index + 1}/{total}: {label}")

    def start_run(self, name: str, total_rounds: int) -> None:
        """Announce a run."""
        self._totals[name] = total_rounds
        self._write(f"{name}: {total_rounds} rounds")

    def advance(self, name: str, record: RoundRecord) -> None:
        """One line per round: metrics, replies, dropouts, trips and bytes."""
        shown = "".join(f" {k} {v:.4f}" for k, v in record.metrics.items() if k in ("accuracy", "loss"))
        dropped = f" dropped {record.dropped}" if record.dropped else ""
        skipped = f" skipped: {record.reason}" if record.status != "ok" else ""
        self._write(
            f"{name}: round {record.round}/{self._totals.get(name, '?')}{shown} replies {record.replies}"
            f"{dropped} trips {record.trips} up {record.bytes_up} B down {record.bytes_down} B"
            f" {record.wall_time_s:.1f} s{skipped}"
        )

    def finish_run(self, name: str) -> None:
        """Announce the end of a run."""
        self._write(f"{name}: done")
