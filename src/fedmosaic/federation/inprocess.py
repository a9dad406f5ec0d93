"""The in-process engine: every client runs in this process, one after another."""

from __future__ import annotations

from collections.abc import Mapping

from typing_extensions import override

from fedmosaic.federation.grid import Grid
from fedmosaic.federation.host import ClientFactory, ClientHost
from fedmosaic.federation.message import Message


class InProcessGrid(ClientHost, Grid):
    """Calls each client's logic directly, in ascending client order.

    Parameters
    ----------
    client_factory : callable int -> ClientLogic
        Builds the logic (with its private data) of a client on first use.
    seed : int
        Experiment seed; each client handles each round with a seed derived
        from (seed, round, client id, "client").
    cache : int or None, default None
        Most client logics kept built between messages (the least recently
        used are rebuilt when needed); ``None``: all.
    state_budget_bytes : int or None, default None
        Memory for client states; past it the least recently used go to disk.

    Notes
    -----
    Messages are handed over as read-only views, not copies: a client that
    tries to modify a received array in place fails at once. Only clients
    that have received a message have a state.
    """

    def __init__(
        self,
        client_factory: ClientFactory,
        seed: int,
        *,
        cache: int | None = None,
        state_budget_bytes: int | None = None,
    ) -> None:
        super().__init__(client_factory, seed, cache=cache, state_budget_bytes=state_budget_bytes)
        self.delivered: list[tuple[int, int]] = []

    @override
    def send_and_receive(
        self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int]
    ) -> dict[int, Message]:
        self.delivered.extend((rnd, client) for client in sorted(messages))
        return self.handle_all({c: m for c, m in messages.items() if c not in failing}, rnd)
