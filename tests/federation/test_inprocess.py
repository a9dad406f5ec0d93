"""InProcessGrid: calls client logic directly, in client order, keeping client states."""

from typing import ClassVar

import numpy as np
import pytest

from fedmosaic.federation import (
    ClientContext,
    ClientLogic,
    ClientState,
    InProcessGrid,
    Message,
    derive_seed,
)


class Recorder(ClientLogic):
    """Counts messages in its state and records what it saw."""

    log: ClassVar[list[tuple[int, int]]] = []

    def __init__(self, client_id: int) -> None:
        self.client_id = client_id
        self.contexts: list[ClientContext] = []
        self.received: list[np.ndarray] = []

    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        self.contexts.append(context)
        self.received.append(message.arrays["w"])
        Recorder.log.append((context.round, context.client_id))
        state.config["handled"] = int(state.config.get("handled", 0)) + 1
        return Message(arrays={"w": message.arrays["w"] + 1.0}, config={"handled": state.config["handled"]})


@pytest.fixture
def grid() -> InProcessGrid:
    Recorder.log = []
    return InProcessGrid(Recorder, seed=11)


def _broadcast(clients: list[int], w: np.ndarray | None = None) -> dict[int, Message]:
    w = np.zeros(2) if w is None else w
    return {c: Message(arrays={"w": w}) for c in clients}


def test_every_non_failing_client_replies() -> None:
    grid = InProcessGrid(Recorder, seed=0)
    replies = grid.send_and_receive(_broadcast([0, 1, 2]), rnd=1, failing=frozenset())
    assert sorted(replies) == [0, 1, 2]
    np.testing.assert_array_equal(replies[1].arrays["w"], [1.0, 1.0])


def test_failing_clients_get_no_handler_call_and_no_reply(grid: InProcessGrid) -> None:
    # Execute
    replies = grid.send_and_receive(_broadcast([0, 1, 2, 3]), rnd=1, failing=frozenset({1, 3}))

    # Assert
    assert sorted(replies) == [0, 2]
    assert Recorder.log == [(1, 0), (1, 2)]


def test_delivered_logs_every_addressed_client_including_failing_ones(grid: InProcessGrid) -> None:
    """A failing client receives its message but never answers."""
    # Execute
    grid.send_and_receive(_broadcast([2, 0]), rnd=1, failing=frozenset({2}))
    grid.send_and_receive(_broadcast([1]), rnd=2, failing=frozenset())

    # Assert
    assert grid.delivered == [(1, 0), (1, 2), (2, 1)]


def test_clients_are_called_in_ascending_order_whatever_the_message_order(grid: InProcessGrid) -> None:
    messages = _broadcast([3, 0, 2, 1])
    grid.send_and_receive(messages, rnd=1, failing=frozenset())
    assert Recorder.log == [(1, 0), (1, 1), (1, 2), (1, 3)]


def test_a_clients_state_persists_across_rounds(grid: InProcessGrid) -> None:
    # Execute
    for rnd in (1, 2, 3):
        failing = frozenset({1}) if rnd == 2 else frozenset()
        replies = grid.send_and_receive(_broadcast([0, 1]), rnd=rnd, failing=failing)

    # Assert
    assert replies[0].config["handled"] == 3
    assert replies[1].config["handled"] == 2
    assert grid.client_states()[0].config == {"handled": 3}


def test_client_logic_is_built_once_per_client_and_only_when_needed() -> None:
    # Prepare
    built: list[int] = []

    def factory(client_id: int) -> Recorder:
        built.append(client_id)
        return Recorder(client_id)

    grid = InProcessGrid(factory, seed=0)

    # Execute
    for rnd in (1, 2, 3):
        grid.send_and_receive(_broadcast([0, 2]), rnd=rnd, failing=frozenset())

    # Assert
    assert built == [0, 2]


def test_only_clients_that_handled_a_message_have_a_state(grid: InProcessGrid) -> None:
    grid.send_and_receive(_broadcast([0, 1]), rnd=1, failing=frozenset({1}))
    assert sorted(grid.client_states()) == [0]


def test_context_carries_client_round_and_a_seed_derived_from_them() -> None:
    # Prepare
    clients: dict[int, Recorder] = {}

    def factory(client_id: int) -> Recorder:
        clients[client_id] = Recorder(client_id)
        return clients[client_id]

    grid = InProcessGrid(factory, seed=11)

    # Execute
    grid.send_and_receive(_broadcast([4]), rnd=7, failing=frozenset())

    # Assert
    assert clients[4].contexts == [ClientContext(4, 7, derive_seed(11, 7, 4, "client"))]


def test_restored_states_replace_the_held_ones() -> None:
    # Prepare
    first = InProcessGrid(Recorder, seed=0)
    for rnd in (1, 2):
        first.send_and_receive(_broadcast([0]), rnd=rnd, failing=frozenset())
    second = InProcessGrid(Recorder, seed=0)

    # Execute
    second.load_client_states(first.client_states())
    reply = second.send_and_receive(_broadcast([0]), rnd=3, failing=frozenset())

    # Assert
    assert reply[0].config["handled"] == 3


def test_messages_are_handed_over_read_only_without_copy() -> None:
    # Prepare
    clients: dict[int, Recorder] = {}

    def factory(client_id: int) -> Recorder:
        clients[client_id] = Recorder(client_id)
        return clients[client_id]

    grid = InProcessGrid(factory, seed=0)
    w = np.arange(3.0)

    # Execute
    grid.send_and_receive(_broadcast([0], w), rnd=1, failing=frozenset())

    # Assert
    received = clients[0].received[0]
    assert np.shares_memory(received, w)
    with pytest.raises(ValueError, match="read-only"):
        received[0] = 5.0
    assert w.flags.writeable


def test_a_client_writing_into_a_received_array_fails_at_once() -> None:
    # Prepare
    class Vandal(ClientLogic):
        def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
            message.arrays["w"] *= 2.0
            return message

    grid = InProcessGrid(lambda _: Vandal(), seed=0)
    w = np.ones(2)

    # Execute / Assert
    with pytest.raises(ValueError, match="read-only"):
        grid.send_and_receive(_broadcast([0], w), rnd=1, failing=frozenset())
    np.testing.assert_array_equal(w, [1.0, 1.0])


def test_replies_are_handed_back_read_only(grid: InProcessGrid) -> None:
    replies = grid.send_and_receive(_broadcast([0]), rnd=1, failing=frozenset())
    with pytest.raises(ValueError, match="read-only"):
        replies[0].arrays["w"][0] = 1.0
