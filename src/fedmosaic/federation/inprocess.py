"""The in-process engine: every client runs in this process, one after another."""

from __future__ import annotations

from typing import Callable, Mapping

from fedmosaic.federation.grid import Grid
from fedmosaic.federation.logic import ClientContext, ClientLogic
from fedmosaic.federation.message import Message
from fedmosaic.federation.seeding import derive_seed
from fedmosaic.federation.state import ClientState


class InProcessGrid(Grid):
    """Calls each client's logic directly, in ascending client order.

    Parameters
    ----------
    client_factory : callable int -> ClientLogic
        Builds the logic (with its private data) of a client on first use.
    seed : int
        Experiment seed; each client handles each round with a seed derived
        from (seed, round, client id, "client").

    Notes
    -----
    Messages are handed over as read-only views, not copies: a client that
    tries to modify a received array in place fails at once. Client states
    are kept in memory; only clients that have received a message have one.
    """

    def __init__(self, client_factory: Callable[[int], ClientLogic], seed: int) -> None:
        self._client_factory = client_factory
        self._seed = seed
        self._clients: dict[int, ClientLogic] = {}
        self._states: dict[int, ClientState] = {}
        self.delivered: list[tuple[int, int]] = []

    def send_and_receive(
        self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int]
    ) -> dict[int, Message]:
        replies: dict[int, Message] = {}
        for client_id in sorted(messages):
            self.delivered.append((rnd, client_id))
            if client_id in failing:
                continue
            logic = self._clients.get(client_id)
            if logic is None:
                logic = self._clients[client_id] = self._client_factory(client_id)
            state = self._states.setdefault(client_id, ClientState())
            context = ClientContext(client_id, rnd, derive_seed(self._seed, rnd, client_id, "client"))
            reply = logic.handle(messages[client_id].read_only(), state, context)
            replies[client_id] = reply.read_only()
        return replies

    def client_states(self) -> dict[int, ClientState]:
        return dict(self._states)

    def load_client_states(self, states: Mapping[int, ClientState]) -> None:
        self._states = dict(states)
