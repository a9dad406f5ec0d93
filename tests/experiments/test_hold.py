"""Specification of a run held between rounds until someone releases it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedmosaic.errors import FedmosaicError
from fedmosaic.experiments.hold import HeldProgress, held_marker, release_marker
from fedmosaic.experiments.progress import SilentProgress
from fedmosaic.federation import RoundRecord


class Recorder(SilentProgress):
    """A progress sink that keeps the rounds it is told about."""

    def __init__(self) -> None:
        self.rounds: list[int] = []

    def advance(self, name: str, record: RoundRecord) -> None:
        """Keep the round."""
        self.rounds.append(record.round)


def _record(rnd: int) -> RoundRecord:
    return RoundRecord(
        rnd, "ok", clients_sampled=2, replies=2, dropped=[], bytes_up=0, bytes_down=0, trips=1, wall_time_s=0
    )


def test_the_run_waits_after_its_round_until_released_and_the_round_is_reported_first(tmp_path: Path) -> None:
    # Prepare: the release comes on the third look
    recorder, looks = Recorder(), []

    def look(seconds: float) -> None:
        looks.append(recorder.rounds.copy())
        if len(looks) == 3:
            release_marker(tmp_path, 2).touch()

    progress = HeldProgress(recorder, 2, tmp_path, sleep=look)

    # Execute
    for rnd in (1, 2, 3):
        progress.advance("FedAvg", _record(rnd))

    # Assert: held after round 2 only (its line already out), marker written, released on the third look
    assert looks == [[1, 2]] * 3
    assert held_marker(tmp_path, 2).read_text() == "FedAvg"
    assert not held_marker(tmp_path, 1).exists()
    assert recorder.rounds == [1, 2, 3]


def test_a_run_is_held_once_even_when_the_round_comes_again(tmp_path: Path) -> None:
    # Prepare: a second run of the experiment reaches round 1 too
    release_marker(tmp_path, 1).touch()
    progress = HeldProgress(Recorder(), 1, tmp_path, sleep=pytest.fail)

    # Execute
    progress.advance("A", _record(1))
    held_marker(tmp_path, 1).unlink()
    progress.advance("B", _record(1))

    # Assert
    assert not held_marker(tmp_path, 1).exists()


def test_a_run_never_released_fails_with_the_file_it_waited_for(tmp_path: Path) -> None:
    # Prepare: a clock that moves 1 s a look
    ticks = iter(range(1000))
    progress = HeldProgress(Recorder(), 1, tmp_path, timeout_s=5, sleep=lambda s: None, clock=lambda: next(ticks))

    # Execute / Assert
    with pytest.raises(FedmosaicError, match=r"held after round 1 saw no round-1.release within 5 s"):
        progress.advance("A", _record(1))
