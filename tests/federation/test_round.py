"""RoundContext: the server logic's counted channel to the round's clients."""

from collections.abc import Mapping

import numpy as np
import pytest

from fedmosaic.errors import FedmosaicError
from fedmosaic.federation import ClientState, Grid, Message, QuorumNotMet, RoundContext


class EchoGrid(Grid):
    """Replies to each message with its arrays plus a metric; drops failing clients."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[int], int, frozenset[int]]] = []

    def send_and_receive(
        self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int]
    ) -> dict[int, Message]:
        self.calls.append((sorted(messages), rnd, failing))
        return {c: Message(arrays=dict(m.arrays), metrics={"n": 1.0}) for c, m in messages.items() if c not in failing}


def _message(size: int) -> Message:
    return Message(arrays={"w": np.zeros(size)}, config={"round": 1})


def test_exchange_counts_bytes_both_ways_trips_and_repliers() -> None:
    # Prepare
    grid = EchoGrid()
    ctx = RoundContext(round=1, clients=[0, 1, 2], seed=0, grid=grid, failing=frozenset({2}))
    messages = {c: _message(4) for c in (0, 1, 2)}

    # Execute
    replies = ctx.exchange(messages)
    ctx.exchange({0: _message(2)})

    # Assert: the failing client's message counts down; no reply counts up
    assert sorted(replies) == [0, 1]
    down_first = 3 * messages[0].nbytes()
    up_first = 2 * replies[0].nbytes()
    assert ctx.bytes_down == down_first + _message(2).nbytes()
    assert ctx.bytes_up == up_first + Message(arrays={"w": np.zeros(2)}, metrics={"n": 1.0}).nbytes()
    assert ctx.trips == 2
    assert ctx.replied == {0, 1}
    assert grid.calls[0] == ([0, 1, 2], 1, frozenset({2}))


def test_messages_to_clients_not_selected_are_refused_before_sending() -> None:
    # Prepare
    grid = EchoGrid()
    ctx = RoundContext(round=3, clients=[0, 1], seed=0, grid=grid)

    # Execute / Assert
    with pytest.raises(ValueError, match=r"clients \[5\] were not selected"):
        ctx.exchange({0: _message(1), 5: _message(1)})
    assert grid.calls == []
    assert ctx.bytes_down == 0
    assert ctx.trips == 0


def test_fewer_replies_than_min_replies_raise_quorum_not_met() -> None:
    # Prepare
    ctx = RoundContext(round=1, clients=[0, 1, 2], seed=0, grid=EchoGrid(), failing=frozenset({0, 1}), min_replies=2)

    # Execute / Assert
    with pytest.raises(QuorumNotMet, match="1 valid replies < min_replies 2"):
        ctx.exchange({c: _message(1) for c in (0, 1, 2)})
    assert ctx.replied == {2}, "replies that did arrive are still recorded"


def test_an_exchange_without_quorum_returns_whatever_arrives() -> None:
    # Prepare: registering one newcomer in a round that needs two replies
    ctx = RoundContext(round=1, clients=[0, 1, 2], seed=0, grid=EchoGrid(), min_replies=2)

    # Execute
    replies = ctx.exchange({2: _message(1)}, quorum=False)

    # Assert
    assert set(replies) == {2}


def test_quorum_not_met_is_a_user_facing_error() -> None:
    assert issubclass(QuorumNotMet, FedmosaicError)


def test_a_grid_without_client_state_refuses_to_restore_some() -> None:
    # Prepare
    grid = EchoGrid()

    # Execute / Assert
    assert grid.client_states() == {}
    grid.load_client_states({})
    with pytest.raises(NotImplementedError, match="EchoGrid keeps no client state"):
        grid.load_client_states({0: ClientState(config={"a": 1})})
