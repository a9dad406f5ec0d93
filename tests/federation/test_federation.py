"""Federation: the round loop (schedule, exchange, evaluate, record, checkpoint).

The runs use the toy averaging method of ``conftest.py``.
"""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fedmosaic.errors import FedmosaicError
from fedmosaic.federation import (
    ClientState,
    Grid,
    HostileGrid,
    InProcessGrid,
    Message,
    ReplyLimits,
    RoundRecord,
    Schedule,
)
from fedmosaic.federation.checkpoint import load_checkpoint

SAMPLED_WITH_DROPOUT = Schedule(num_clients=6, fraction=0.5, dropout=0.2)


def _comparable(history: list[RoundRecord]) -> list[dict[str, Any]]:
    """Records without their wall time, the only part allowed to differ."""
    return [{k: v for k, v in r.to_dict().items() if k != "wall_time_s"} for r in history]


def _assert_states_equal(actual: Mapping[int, ClientState], expected: Mapping[int, ClientState]) -> None:
    assert sorted(actual) == sorted(expected)
    for client_id, state in expected.items():
        assert actual[client_id].config == state.config
        assert sorted(actual[client_id].arrays) == sorted(state.arrays)
        for name, array in state.arrays.items():
            np.testing.assert_array_equal(actual[client_id].arrays[name], array)


class CountingGrid(Grid):
    """Forwards to an in-process grid and adds up the bytes of what crosses it, per round."""

    def __init__(self, inner: InProcessGrid) -> None:
        self.inner = inner
        self.down: dict[int, int] = {}
        self.up: dict[int, int] = {}

    def send_and_receive(
        self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int]
    ) -> dict[int, Message]:
        replies = self.inner.send_and_receive(messages, rnd, failing)
        self.down[rnd] = self.down.get(rnd, 0) + sum(m.nbytes() for m in messages.values())
        self.up[rnd] = self.up.get(rnd, 0) + sum(r.nbytes() for r in replies.values())
        return replies

    def client_states(self) -> dict[int, ClientState]:
        return self.inner.client_states()

    def load_client_states(self, states: Mapping[int, ClientState]) -> None:
        self.inner.load_client_states(states)


@pytest.mark.parametrize(
    ("kwargs", "parameter"), [({"rounds": 0}, "rounds"), ({"evaluate_every": 0}, "evaluate_every")]
)
def test_invalid_rounds_or_evaluation_period_are_rejected(make_toy, kwargs: dict, parameter: str) -> None:
    with pytest.raises(ValueError, match=parameter):
        make_toy(**kwargs)


def test_the_toy_method_moves_toward_its_target(make_toy) -> None:
    """Sanity of the fixture: averaging brings ``w`` closer to the clients' mean."""
    toy = make_toy(seed=0, rounds=6)
    history = toy.federation.run()
    distances = [r.metrics["distance"] for r in history]
    assert distances[-1] < distances[0]
    assert all(r.status == "ok" and r.trips == 1 for r in history)
    assert [r.round for r in history] == [1, 2, 3, 4, 5, 6]


def test_same_seed_gives_identical_history_and_final_state(make_toy) -> None:
    # Prepare
    first = make_toy(seed=3, rounds=5, schedule=SAMPLED_WITH_DROPOUT)
    second = make_toy(seed=3, rounds=5, schedule=SAMPLED_WITH_DROPOUT)

    # Execute
    history_1 = first.federation.run()
    history_2 = second.federation.run()

    # Assert
    assert _comparable(history_1) == _comparable(history_2)
    np.testing.assert_array_equal(first.server.w, second.server.w)
    _assert_states_equal(second.grid.client_states(), first.grid.client_states())
    assert first.grid.delivered == second.grid.delivered


def test_different_seed_gives_a_different_run(make_toy) -> None:
    # Prepare
    first = make_toy(seed=3, rounds=5, schedule=SAMPLED_WITH_DROPOUT)
    second = make_toy(seed=4, rounds=5, schedule=SAMPLED_WITH_DROPOUT)

    # Execute
    history_1 = first.federation.run()
    history_2 = second.federation.run()

    # Assert
    assert _comparable(history_1) != _comparable(history_2)
    assert not np.allclose(first.server.w, second.server.w)


def test_a_client_joining_at_round_r_receives_nothing_before_r(make_toy) -> None:
    # Prepare
    toy = make_toy(rounds=5, schedule=Schedule(num_clients=4, joins={3: 3}))

    # Execute
    history = toy.federation.run()

    # Assert
    rounds_of_3 = [rnd for rnd, client in toy.grid.delivered if client == 3]
    assert rounds_of_3 == [3, 4, 5]
    assert [r.clients_sampled for r in history] == [3, 3, 4, 4, 4]
    assert toy.grid.client_states()[3].config["handled"] == 3


def test_a_dropped_client_is_listed_and_the_round_still_aggregates(make_toy) -> None:
    # Prepare
    toy = make_toy(rounds=3, schedule=Schedule(num_clients=4, failures={2: frozenset({1})}))
    repliers: dict[int, list[int]] = {}

    # Execute
    history = toy.federation.run(on_round=lambda r: repliers.update({r.round: toy.server.last_repliers}))

    # Assert
    second = history[1]
    assert second.status == "ok"
    assert second.dropped == [1]
    assert (second.clients_sampled, second.replies) == (4, 3)
    assert repliers[2] == [0, 2, 3], "the dropped client's reply must not be aggregated"
    assert history[0].dropped == []
    assert history[2].dropped == []
    assert toy.server.aggregations == 3
    assert toy.grid.client_states()[1].config["handled"] == 2


def test_too_few_replies_skip_the_round_and_keep_the_server_state(make_toy) -> None:
    # Prepare
    schedule = Schedule(num_clients=4, min_replies=3, failures={2: frozenset({0, 1})})
    toy = make_toy(rounds=3, schedule=schedule)
    states: list[ClientState] = []

    # Execute
    history = toy.federation.run(on_round=lambda r: states.append(toy.server.state_dict()))

    # Assert
    skipped = history[1]
    assert skipped.status == "skipped"
    assert "min_replies 3" in skipped.reason
    assert (skipped.replies, skipped.dropped) == (2, [0, 1])
    np.testing.assert_array_equal(states[1].arrays["w"], states[0].arrays["w"])
    assert states[1].config == states[0].config == {"aggregations": 1, "exchanges": 1}
    assert "mean_handled" not in skipped.metrics
    assert "distance" in skipped.metrics
    assert [r.status for r in history] == ["ok", "skipped", "ok"]
    assert history[0].reason == history[2].reason == ""


def test_a_round_without_available_clients_is_skipped(make_toy) -> None:
    # Prepare
    toy = make_toy(rounds=3, schedule=Schedule(num_clients=2, joins={0: 3, 1: 3}))

    # Execute
    history = toy.federation.run()

    # Assert
    assert [(r.status, r.reason) for r in history[:2]] == [("skipped", "no client available")] * 2
    assert [r.clients_sampled for r in history] == [0, 0, 2]
    assert history[2].status == "ok"
    assert min(rnd for rnd, _ in toy.grid.delivered) == 3


def test_bytes_up_and_down_are_the_sums_of_message_sizes(make_toy) -> None:
    # Prepare
    spies: list[CountingGrid] = []

    def spy(grid: InProcessGrid) -> CountingGrid:
        spies.append(CountingGrid(grid))
        return spies[-1]

    schedule = Schedule(num_clients=5, dropout=0.3, failures={1: frozenset({0})})
    toy = make_toy(rounds=4, schedule=schedule, wrap_grid=spy)

    # Execute
    history = toy.federation.run()

    # Assert
    assert any(r.dropped for r in history), "the check needs a failing client"
    for record in history:
        assert record.bytes_down == spies[0].down[record.round] > 0
        assert record.bytes_up == spies[0].up[record.round] > 0
    one_message = Message(arrays={"w": toy.server.w}, config={"round": 1}).nbytes()
    assert history[0].bytes_down == 5 * one_message, "failing clients still receive their message"


def test_evaluation_runs_every_k_rounds_and_after_the_last(make_toy) -> None:
    # Prepare
    toy = make_toy(rounds=7, evaluate_every=3)

    # Execute
    history = toy.federation.run()

    # Assert
    assert [r.round for r in history if "distance" in r.metrics] == [3, 6, 7]
    assert toy.server.evaluated_rounds == [3, 6, 7]
    assert all("mean_handled" in r.metrics for r in history)
    assert all(isinstance(v, float) for r in history for v in r.metrics.values())


def test_on_round_sees_each_new_record_once_in_order(make_toy) -> None:
    toy = make_toy(rounds=3)
    seen: list[RoundRecord] = []
    history = toy.federation.run(on_round=seen.append)
    assert seen == history


def test_a_checkpoint_is_written_after_every_round(make_toy, tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "checkpoint.npz"
    toy = make_toy(rounds=3, checkpoint=path, fingerprint="cfg")
    saved: list[tuple[int, bool]] = []

    def inspect(record: RoundRecord) -> None:
        on_disk = load_checkpoint(path)
        saved.append((len(on_disk.history), on_disk.finished))

    # Execute
    toy.federation.run(on_round=inspect)

    # Assert
    assert saved == [(1, False), (2, False), (3, True)]
    final = load_checkpoint(path)
    assert final.fingerprint == "cfg"
    np.testing.assert_array_equal(final.server.arrays["w"], toy.server.w)
    _assert_states_equal(final.clients, toy.grid.client_states())


def test_resume_after_a_kill_finishes_exactly_like_an_uninterrupted_run(
    make_toy, simulated_kill, tmp_path: Path
) -> None:
    # Prepare: an uninterrupted reference, and a run killed inside round 4
    path = tmp_path / "checkpoint.npz"
    reference = make_toy(seed=5, rounds=6, schedule=SAMPLED_WITH_DROPOUT)
    expected = reference.federation.run()
    killed = make_toy(seed=5, rounds=6, schedule=SAMPLED_WITH_DROPOUT, checkpoint=path, crash_at=4)
    with pytest.raises(simulated_kill):
        killed.federation.run()
    checkpointed = load_checkpoint(path).history
    assert len(checkpointed) == 3

    # Execute: a fresh process (new server, new grid) resumes
    resumed = make_toy(seed=5, rounds=6, schedule=SAMPLED_WITH_DROPOUT, checkpoint=path)
    history = resumed.federation.run(resume=True)

    # Assert
    assert _comparable(history) == _comparable(expected)
    assert [r.to_dict() for r in history[:3]] == checkpointed
    np.testing.assert_array_equal(resumed.server.w, reference.server.w)
    assert resumed.server.aggregations == reference.server.aggregations
    _assert_states_equal(resumed.grid.client_states(), reference.grid.client_states())
    assert min(rnd for rnd, _ in resumed.grid.delivered) == 4, "finished rounds are not rerun"
    assert load_checkpoint(path).finished


def test_resume_with_another_fingerprint_is_refused(make_toy, tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "checkpoint.npz"
    make_toy(rounds=2, checkpoint=path, fingerprint="config-a").federation.run()
    other = make_toy(rounds=4, checkpoint=path, fingerprint="config-b")

    # Execute / Assert
    with pytest.raises(FedmosaicError, match="another configuration"):
        other.federation.run(resume=True)
    assert other.grid.delivered == []


def test_resume_without_a_checkpoint_file_starts_from_scratch(make_toy, tmp_path: Path) -> None:
    # Prepare
    plain = make_toy(seed=2, rounds=3)
    resumed = make_toy(seed=2, rounds=3, checkpoint=tmp_path / "none_yet.npz")

    # Execute
    expected = plain.federation.run()
    history = resumed.federation.run(resume=True)

    # Assert
    assert _comparable(history) == _comparable(expected)
    np.testing.assert_array_equal(resumed.server.w, plain.server.w)


def test_resuming_a_finished_run_runs_no_round(make_toy, tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "checkpoint.npz"
    first = make_toy(rounds=3, checkpoint=path)
    expected = first.federation.run()
    again = make_toy(rounds=3, checkpoint=path)

    # Execute
    history = again.federation.run(resume=True)

    # Assert
    assert [r.to_dict() for r in history] == [r.to_dict() for r in expected]
    assert again.grid.delivered == []
    np.testing.assert_array_equal(again.server.w, first.server.w)


def test_without_resume_an_existing_checkpoint_is_ignored_and_replaced(make_toy, tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "checkpoint.npz"
    make_toy(seed=1, rounds=2, checkpoint=path, fingerprint="old").federation.run()
    fresh = make_toy(seed=2, rounds=3, checkpoint=path, fingerprint="new")

    # Execute
    history = fresh.federation.run()

    # Assert
    assert len(history) == 3
    assert load_checkpoint(path).fingerprint == "new"
    assert len(load_checkpoint(path).history) == 3


def test_a_server_that_is_done_ends_the_run_early_and_its_last_round_is_evaluated(make_toy, tmp_path: Path) -> None:
    # Prepare: a toy server that declares itself done after two aggregations
    path = tmp_path / "checkpoint.npz"
    toy = make_toy(rounds=6, evaluate_every=5, checkpoint=path)
    toy.server.done = lambda: toy.server.aggregations >= 2  # type: ignore[method-assign]

    # Execute
    history = toy.federation.run()

    # Assert
    assert [r.round for r in history] == [1, 2]
    assert "distance" in history[-1].metrics
    assert load_checkpoint(path).finished


def test_resume_reports_restored_rounds_to_the_progress_callback_first(make_toy, tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "checkpoint.npz"
    make_toy(rounds=2, checkpoint=path).federation.run()
    longer = make_toy(rounds=2, checkpoint=path)
    seen: list[int] = []

    # Execute
    longer.federation.run(resume=True, on_round=lambda record: seen.append(record.round))

    # Assert
    assert seen == [1, 2]


# ----------------------------------------------------------------------------- hostile replies


@pytest.mark.parametrize("attack", ["nan", "inf", "wrong-shape", "unknown-name", "oversized", "malformed"])
def test_malformed_replies_are_dropped_and_recorded_and_the_result_is_that_of_the_others(make_toy, attack: str) -> None:
    # Prepare: clients 1 and 4 of 6 send malformed replies; the clean run leaves them out.
    hostile = frozenset({1, 4})
    attacked = make_toy(
        rounds=3,
        schedule=Schedule(num_clients=6),
        wrap_grid=lambda grid: HostileGrid(grid, hostile, attack, seed=0, max_bytes=10_000),
    )
    attacked.federation.limits = ReplyLimits(max_bytes=10_000)
    clean = make_toy(rounds=3, schedule=Schedule(num_clients=6, failures=dict.fromkeys((1, 2, 3), hostile)))

    # Execute
    history = attacked.federation.run()
    reference = clean.federation.run()

    # Assert: every round went on without them, saying why, and ended where the clean run did.
    assert [r.status for r in history] == ["ok"] * 3
    for record in history:
        assert sorted(record.rejected) == ["1", "4"]
        assert all(reason and "\n" not in reason for reason in record.rejected.values())
    np.testing.assert_array_equal(attacked.server.w, clean.server.w)
    assert history[-1].metrics == reference[-1].metrics


def test_the_retry_policy_tries_a_round_again_with_other_clients_before_skipping(make_toy) -> None:
    # Prepare: 2 of 6 clients per round, 2 valid replies needed, client 0 always sends NaN.
    def toy(retries: int):
        made = make_toy(
            rounds=6,
            schedule=Schedule(num_clients=6, clients_per_round=2, min_replies=2),
            wrap_grid=lambda grid: HostileGrid(grid, frozenset({0}), "nan", seed=0),
        )
        made.federation.retries = retries
        return made

    # Execute
    skipping = toy(0).federation.run()
    retrying = toy(3).federation.run()

    # Assert: rounds that drew client 0 are skipped at once, or retried until a sample without it.
    hit = [r.round for r in skipping if "0" in r.rejected]
    assert hit, "the seed must draw client 0 at least once"
    assert all(skipping[r - 1].status == "skipped" and "(1 rejected)" in skipping[r - 1].reason for r in hit)
    assert all(r.status == "ok" for r in retrying)
    assert all(retrying[r - 1].attempts > 1 and "0" in retrying[r - 1].rejected for r in hit)
