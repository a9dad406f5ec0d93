"""Where client logic runs: builds each client on use, keeps its state, hands messages over."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping

from fedmosaic.federation.logic import ClientCall, ClientContext, ClientLogic
from fedmosaic.federation.message import Message
from fedmosaic.federation.state import ClientState
from fedmosaic.federation.store import StateStore
from fedmosaic.seeding import derive_seed

ClientFactory = Callable[[int], ClientLogic]


class ClientHost:
    """Runs the logic of the clients one process is responsible for.

    A client's logic (its model, its data as tensors) is built on first use
    and kept for at most ``cache`` clients, the least recently used being
    dropped and rebuilt when needed again: :class:`ClientLogic` keeps what it
    must remember in its state, so that costs time, never results. States
    live in a :class:`StateStore` with a memory budget.

    Parameters
    ----------
    client_factory : callable int -> ClientLogic
        Builds a client's logic (with its private data).
    seed : int
        Experiment seed; each client handles each round with a seed derived
        from (seed, round, client id, "client").
    cache : int or None, default None
        Most client logics kept built; ``None``: all.
    state_budget_bytes : int or None, default None
        Memory for client states before they spill to disk; ``None``: no limit.
    """

    def __init__(
        self,
        client_factory: ClientFactory,
        seed: int,
        *,
        cache: int | None = None,
        state_budget_bytes: int | None = None,
    ) -> None:
        if cache is not None and cache < 1:
            raise ValueError(f"cache must be >= 1, got {cache}")
        self._client_factory = client_factory
        self._seed = seed
        self._cache = cache
        self._logics: OrderedDict[int, ClientLogic] = OrderedDict()
        self.states = StateStore(state_budget_bytes)

    def handle(self, client_id: int, message: Message, rnd: int) -> Message:
        """Let ``client_id`` handle ``message`` of round ``rnd`` and return its reply.

        The message and the reply are handed over as read-only views, not
        copies: a client that modifies a received array in place fails at once.
        """
        call = self._call(client_id, message, rnd)
        return call.logic.handle(call.message, call.state, call.context).read_only()

    def handle_all(self, messages: Mapping[int, Message], rnd: int) -> dict[int, Message]:
        """Handle several clients' messages in ascending client order.

        Clients whose logic :attr:`~fedmosaic.federation.logic.ClientLogic.handles_together`
        (all of one class) get theirs in one
        :meth:`~fedmosaic.federation.logic.ClientLogic.handle_together`.
        """
        clients = sorted(messages)
        together = len(clients) > 1 and type(self._logic(clients[0])).handles_together
        if not together:
            replies = {client: self.handle(client, messages[client], rnd) for client in clients}
        else:
            calls = [self._call(client, messages[client], rnd) for client in clients]
            kinds = {type(call.logic) for call in calls}
            handled = (
                kinds.pop().handle_together(calls)
                if len(kinds) == 1
                else [call.logic.handle(call.message, call.state, call.context) for call in calls]
            )
            replies = {client: reply.read_only() for client, reply in zip(clients, handled, strict=True)}
        self.states.trim()
        return replies

    def _call(self, client_id: int, message: Message, rnd: int) -> ClientCall:
        """What ``client_id`` needs to handle ``message`` of round ``rnd``: its logic, state and context."""
        context = ClientContext(client_id, rnd, derive_seed(self._seed, rnd, client_id, "client"))
        return ClientCall(self._logic(client_id), message.read_only(), self.states.get(client_id), context)

    def client_states(self) -> dict[int, ClientState]:
        """Every client's state (for checkpoints)."""
        return self.states.snapshot()

    def load_client_states(self, states: Mapping[int, ClientState]) -> None:
        """Replace the held states."""
        self.states.replace(states)

    def close(self) -> None:
        """Drop the built clients and the states (and their spill files)."""
        self._logics.clear()
        self.states.close()

    def _logic(self, client_id: int) -> ClientLogic:
        logic = self._logics.get(client_id)
        if logic is None:
            logic = self._logics[client_id] = self._client_factory(client_id)
            while self._cache is not None and len(self._logics) > self._cache:
                self._logics.popitem(last=False)
        self._logics.move_to_end(client_id)
        return logic
