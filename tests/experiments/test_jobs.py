"""A run's history from its jobs' histories: federated, centralized and local."""

from __future__ import annotations

import pytest

from fedmosaic.experiments.jobs import combine
from fedmosaic.federation import RoundRecord


def _record(rnd: int, accuracy: float, wall: float, status: str = "ok") -> RoundRecord:
    return RoundRecord(
        round=rnd,
        status=status,
        clients_sampled=1,
        replies=1,
        dropped=[],
        bytes_up=10,
        bytes_down=20,
        trips=1,
        wall_time_s=wall,
        metrics={"accuracy": accuracy},
    )


def test_local_metrics_carry_a_stopped_clients_last_round_but_its_time_counts_once() -> None:
    early = [_record(1, 0.4, 2.0), _record(2, 0.6, 3.0)]
    late = [_record(1, 0.2, 5.0), _record(2, 0.4, 5.0), _record(3, 0.8, 7.0), _record(4, 1.0, 11.0)]

    history = combine("local", [early, late])

    assert [row["metrics"]["accuracy"] for row in history] == pytest.approx([0.3, 0.5, 0.7, 0.8])
    assert [row["metrics"]["accuracy_std"] for row in history] == pytest.approx([0.1, 0.1, 0.1, 0.2])
    assert [row["wall_time_s"] for row in history] == [7.0, 8.0, 7.0, 11.0]
    assert sum(row["wall_time_s"] for row in history) == sum(r.wall_time_s for r in early + late)
    assert [row["clients_sampled"] for row in history] == [2, 2, 1, 1]
    assert [row["replies"] for row in history] == [2, 2, 1, 1]
    assert {row["bytes_up"] for row in history} == {0}


def test_a_local_round_is_skipped_only_where_a_client_that_ran_it_skipped() -> None:
    stopped_on_a_skip = [_record(1, 0.5, 1.0), _record(2, 0.5, 1.0, status="skipped")]
    running = [_record(1, 0.5, 1.0), _record(2, 0.5, 1.0), _record(3, 0.5, 1.0)]

    history = combine("local", [stopped_on_a_skip, running])

    assert [row["status"] for row in history] == ["ok", "skipped", "ok"]


def test_centralized_counts_the_pooled_data_as_round_ones_upload_and_nothing_else() -> None:
    history = combine("centralized", [[_record(1, 0.5, 1.0), _record(2, 0.6, 1.0)]], pooled_bytes=1000)

    assert [(row["bytes_up"], row["bytes_down"]) for row in history] == [(1000, 0), (0, 0)]


def test_federated_history_is_its_one_jobs_records() -> None:
    records = [_record(1, 0.5, 1.0), _record(2, 0.6, 1.5)]

    assert combine("federated", [records]) == [record.to_dict() for record in records]
