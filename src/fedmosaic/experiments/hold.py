"""A pause between two rounds that someone outside the run releases: fault drills at a known point.

A deployment's ``ServerApp`` given a hold (``hold-after`` and ``hold-dir`` in
its run config, :func:`fedmosaic.deploy.submit.submit`'s ``hold_after`` and
``hold_dir``) stops once round ``hold-after`` is recorded and checkpointed,
before the next round's messages are sent. It writes
``<hold-dir>/round-<n>.held`` and waits until ``<hold-dir>/round-<n>.release``
exists. Whatever is done meanwhile (a SuperNode killed, the run stopped)
happens at that point of the run, however fast or slow the machine: the
killed-node and resume tests of the deployment rely on it, and an operator
can use it to rehearse losing a site.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from fedmosaic.errors import FedmosaicError
from fedmosaic.experiments.progress import ProgressSink
from fedmosaic.federation import RoundRecord

HOLD_TIMEOUT_S = 600.0
"""Longest a held run waits for its release before it fails."""

POLL_S = 0.05
"""How often a held run looks for its release file."""


def held_marker(folder: Path, rnd: int) -> Path:
    """The file a run held after round ``rnd`` writes."""
    return folder / f"round-{rnd}.held"


def release_marker(folder: Path, rnd: int) -> Path:
    """The file that releases a run held after round ``rnd``."""
    return folder / f"round-{rnd}.release"


class HeldProgress:
    """Forwards progress to ``inner`` and holds the run once after round ``after`` until it is released.

    Parameters
    ----------
    inner : ProgressSink
        Receives every event first.
    after : int
        The round after which the run is held (once: a later run of the experiment, or rounds restored
        from a checkpoint after the first hold, pass on).
    folder : Path
        Where the held and release markers are.
    timeout_s : float, default HOLD_TIMEOUT_S
        How long to wait for the release.
    sleep : callable float -> None, default time.sleep
        Waits between looks for the release file.
    clock : callable () -> float, default time.monotonic
        Measures the wait.

    Examples
    --------
    >>> import tempfile
    >>> from fedmosaic.experiments.progress import SilentProgress
    >>> folder = Path(tempfile.mkdtemp())
    >>> progress = HeldProgress(SilentProgress(), 1, folder, sleep=lambda s: release_marker(folder, 1).touch())
    >>> record = RoundRecord(1, "ok", clients_sampled=3, replies=3, dropped=[], bytes_up=0, bytes_down=0, trips=1,
    ...                      wall_time_s=0.1)
    >>> progress.advance("FedAvg", record)
    >>> held_marker(folder, 1).exists()
    True
    """

    def __init__(
        self,
        inner: ProgressSink,
        after: int,
        folder: Path,
        *,
        timeout_s: float = HOLD_TIMEOUT_S,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._inner = inner
        self._after = after
        self._folder = folder
        self._timeout_s = timeout_s
        self._sleep = sleep
        self._clock = clock
        self._held = False

    def start_point(self, index: int, total: int, label: str) -> None:
        """Forward the event."""
        self._inner.start_point(index, total, label)

    def start_run(self, name: str, total_rounds: int) -> None:
        """Forward the event."""
        self._inner.start_run(name, total_rounds)

    def advance(self, name: str, record: RoundRecord) -> None:
        """Forward the event; after round ``after``, the first time, wait for the release."""
        self._inner.advance(name, record)
        if self._held or record.round != self._after:
            return
        self._held = True
        self._folder.mkdir(parents=True, exist_ok=True)
        held_marker(self._folder, record.round).write_text(name)
        release = release_marker(self._folder, record.round)
        deadline = self._clock() + self._timeout_s
        while not release.exists():
            if self._clock() > deadline:
                raise FedmosaicError(
                    f"hold-dir: the run held after round {record.round} saw no {release.name}"
                    f" within {self._timeout_s:.0f} s"
                )
            self._sleep(POLL_S)

    def finish_run(self, name: str) -> None:
        """Forward the event."""
        self._inner.finish_run(name)


def when_held(folder: Path, rnd: int, action: Callable[[], None], *, timeout_s: float = HOLD_TIMEOUT_S) -> None:
    """Once a run is held after round ``rnd`` (its marker in ``folder``), do ``action``, then release the run.

    The fault drills' side of the hold: run it in a thread beside the held run.

    Raises
    ------
    FedmosaicError
        If the run is not held within ``timeout_s`` (the run is released all the same).
    """
    deadline = time.monotonic() + timeout_s
    while not held_marker(folder, rnd).exists():
        if time.monotonic() > deadline:
            release_marker(folder, rnd).touch()
            raise FedmosaicError(f"the run was not held after round {rnd} within {timeout_s:g} s")
        time.sleep(POLL_S)
    try:
        action()
    finally:
        release_marker(folder, rnd).touch()
