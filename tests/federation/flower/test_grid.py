"""FlowerGrid: the federation loop over Flower messages, with nodes mapped to partitions and lost replies as dropouts."""

import numpy as np
import pytest

from fedmosaic.federation import Message, Schedule
from fedmosaic.federation.flower import grid as grid_module
from fedmosaic.federation.flower.grid import PARTITION_QUERY, FlowerGrid

HEADER = {"job": "0/federated", "seed": 5}


def _flower_grid(grid, timeout_s: float = 5.0) -> FlowerGrid:
    return FlowerGrid(grid, HEADER, timeout_s=timeout_s, connect_timeout_s=0.5)


def test_a_federation_over_flower_ends_exactly_as_in_process(make_toy, toy_client, fake_flower_grid) -> None:
    """The toy clients' steps depend on their state: equality shows it lives in context.state."""
    # Prepare
    schedule = Schedule(num_clients=4, joins={3: 3}, fraction=0.75)
    in_process = make_toy(seed=HEADER["seed"], rounds=5, schedule=schedule)
    flower = make_toy(
        seed=HEADER["seed"],
        rounds=5,
        schedule=schedule,
        wrap_grid=lambda _: _flower_grid(fake_flower_grid([2, 0, 3, 1], toy_client)),
    )

    # Execute
    expected = in_process.federation.run()
    history = flower.federation.run()

    # Assert
    np.testing.assert_array_equal(flower.server.w, in_process.server.w)
    assert [r.metrics for r in history] == [r.metrics for r in expected]
    assert [(r.replies, r.dropped, r.bytes_up, r.bytes_down, r.trips) for r in history] == [
        (r.replies, r.dropped, r.bytes_up, r.bytes_down, r.trips) for r in expected
    ]


def test_nodes_are_asked_their_partition_once_and_messages_go_to_the_right_node(toy_client, fake_flower_grid) -> None:
    # Prepare
    fake = fake_flower_grid([1, 0], toy_client)
    grid = _flower_grid(fake)
    message = Message(arrays={"w": np.zeros(3)})

    # Execute
    grid.send_and_receive({0: message, 1: message}, 1, frozenset())
    grid.send_and_receive({0: message}, 2, frozenset())

    # Assert
    assert fake.node_of(0).handled == ["query", "train", "train"]
    assert fake.node_of(1).handled == ["query", "train"]
    assert sum(m.metadata.message_type == "query" for m in fake.pushed) == 2


def test_an_error_reply_is_a_dropout_with_its_reason(toy_client, fake_flower_grid, caplog) -> None:
    # Prepare
    fake = fake_flower_grid([0, 1, 2], toy_client)
    grid = _flower_grid(fake)
    grid.send_and_receive({c: Message(arrays={"w": np.zeros(3)}) for c in range(3)}, 1, frozenset())
    fake.node_of(1).behaviour = "error"

    # Execute
    replies = grid.send_and_receive({c: Message(arrays={"w": np.zeros(3)}) for c in range(3)}, 2, frozenset())

    # Assert
    assert sorted(replies) == [0, 2]
    assert [(lost.round, lost.client) for lost in grid.lost] == [(2, 1)]
    assert "node unavailable" in grid.lost[0].reason
    assert "client 1 dropped out" in caplog.text


def test_an_exception_in_the_client_logic_is_a_dropout(toy_client, fake_flower_grid) -> None:
    """Flower turns a handler's exception into an error reply (here: a message without ``w``)."""
    grid = _flower_grid(fake_flower_grid([0, 1], toy_client))

    replies = grid.send_and_receive({0: Message(arrays={"w": np.zeros(3)}), 1: Message()}, 1, frozenset())

    assert sorted(replies) == [0]
    assert grid.lost[0].client == 1
    assert "KeyError" in grid.lost[0].reason


def test_a_silent_node_is_a_dropout_after_the_timeout(toy_client, fake_flower_grid) -> None:
    fake = fake_flower_grid([0, 1], toy_client)
    grid = _flower_grid(fake, timeout_s=0.3)
    grid.send_and_receive(
        {0: Message(arrays={"w": np.zeros(3)}), 1: Message(arrays={"w": np.zeros(3)})}, 1, frozenset()
    )
    fake.node_of(0).behaviour = "silent"

    replies = grid.send_and_receive(
        {0: Message(arrays={"w": np.zeros(3)}), 1: Message(arrays={"w": np.zeros(3)})}, 2, frozenset()
    )

    assert sorted(replies) == [1]
    assert "no reply within 0.3 s" in grid.lost[0].reason


def test_a_node_that_left_is_a_dropout_without_a_message(toy_client, fake_flower_grid) -> None:
    fake = fake_flower_grid([0, 1], toy_client)
    grid = _flower_grid(fake)
    grid.send_and_receive(
        {0: Message(arrays={"w": np.zeros(3)}), 1: Message(arrays={"w": np.zeros(3)})}, 1, frozenset()
    )
    fake.node_of(1).behaviour = "disconnected"

    replies = grid.send_and_receive(
        {0: Message(arrays={"w": np.zeros(3)}), 1: Message(arrays={"w": np.zeros(3)})}, 2, frozenset()
    )

    assert sorted(replies) == [0]
    assert "no longer connected" in grid.lost[0].reason
    assert fake.node_of(1).handled == ["query", "train"]


def test_a_partition_no_node_serves_is_a_dropout_without_a_message(toy_client, fake_flower_grid) -> None:
    fake = fake_flower_grid([0], toy_client)
    grid = _flower_grid(fake)

    replies = grid.send_and_receive({0: Message(arrays={"w": np.zeros(3)}), 5: Message()}, 1, frozenset())

    assert sorted(replies) == [0]
    assert grid.lost[0].client == 5
    assert "no connected node" in grid.lost[0].reason
    assert all(m.metadata.dst_node_id != 5 for m in fake.pushed)


def test_a_simulated_failure_receives_nothing_over_flower(toy_client, fake_flower_grid) -> None:
    """As in process, a failing client's handler never runs (its state does not move)."""
    fake = fake_flower_grid([0, 1], toy_client)
    grid = _flower_grid(fake)

    replies = grid.send_and_receive(
        {0: Message(arrays={"w": np.zeros(3)}), 1: Message(arrays={"w": np.zeros(3)})}, 1, frozenset({1})
    )

    assert sorted(replies) == [0]
    assert fake.node_of(1).handled == ["query"]
    assert grid.lost == []


def test_a_node_that_joins_later_is_found_when_its_partition_is_first_addressed(toy_client, fake_flower_grid) -> None:
    fake = fake_flower_grid([0, 1], toy_client)
    fake.node_of(1).behaviour = "disconnected"
    grid = _flower_grid(fake)
    grid.send_and_receive({0: Message(arrays={"w": np.zeros(3)})}, 1, frozenset())

    fake.node_of(1).behaviour = "ok"
    replies = grid.send_and_receive(
        {0: Message(arrays={"w": np.zeros(3)}), 1: Message(arrays={"w": np.zeros(3)})}, 2, frozenset()
    )

    assert sorted(replies) == [0, 1]


def test_a_silent_node_does_not_hold_up_the_first_exchange_once_the_wanted_partitions_answered(
    toy_client, fake_flower_grid, monkeypatch
) -> None:
    """An exchange does not wait on a dead SuperNode once the partitions it needs have answered.

    A SuperNode that died is still listed by the SuperLink until its heartbeats time out: its partition
    query goes unanswered, and the exchange goes on as soon as the partitions it needs are known.
    """
    # Prepare
    fake = fake_flower_grid([0, 1, 2], toy_client)
    fake.node_of(2).behaviour = "silent"
    grid = _flower_grid(fake, timeout_s=0.5)
    waits: list[float] = []
    monkeypatch.setattr(grid_module.time, "sleep", waits.append)

    # Execute
    replies = grid.send_and_receive(
        {0: Message(arrays={"w": np.zeros(3)}), 1: Message(arrays={"w": np.zeros(3)})}, 1, frozenset()
    )

    # Assert: no wait for the silent node (the fake answers at once)
    assert sorted(replies) == [0, 1]
    assert waits == []
    assert grid.lost == []


def test_two_nodes_claiming_one_partition_are_refused(toy_client, fake_flower_grid) -> None:
    grid = _flower_grid(fake_flower_grid([0, 0], toy_client))

    with pytest.raises(Exception, match="both serve partition 0"):
        grid.send_and_receive({0: Message()}, 1, frozenset())


def test_the_bridge_query_is_not_a_method_kind() -> None:
    assert PARTITION_QUERY.startswith("query.")


def test_the_timeout_must_be_positive(fake_flower_grid, toy_client) -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        FlowerGrid(fake_flower_grid([0], toy_client), HEADER, timeout_s=0)
