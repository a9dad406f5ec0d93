"""Progress reporting of a running experiment."""

from __future__ import annotations

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
