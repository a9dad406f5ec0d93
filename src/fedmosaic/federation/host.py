"""Where client logic runs: builds each client on use, keeps its state, hands messages over."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping

from fedmosaic.federation.logic import ClientContext, ClientJob, ClientLogic
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

    :meth:`handle_all` hands the messages that the clients' logic can handle
    together (:meth:`ClientLogic.batch_key`) to :meth:`ClientLogic.handle_many`,
    at most ``cache`` clients at a time.

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
        return self.handle_batch({client_id: message}, rnd)[client_id]

    def handle_all(self, messages: Mapping[int, Message], rnd: int) -> dict[int, Message]:
        """Handle several clients' messages, together where their logic can (:meth:`batches`); replies in ascending client order."""
        replies: dict[int, Message] = {}
        for batch in self.batches(messages):
            replies.update(self.handle_batch({client: messages[client] for client in batch}, rnd))
        self.states.trim()
        return dict(sorted(replies.items()))

    def batches(self, messages: Mapping[int, Message]) -> Iterator[list[int]]:
        """The clients of ``messages`` in groups to handle together, in ascending client order.

        Clients are taken ``cache`` at a time (all at once without a cache), so
        a group's logics stay built while it is handled; within such a chunk,
        clients whose logics are of one class and give their messages the same
        :meth:`ClientLogic.batch_key` form one group, every other client a
        group of its own. Handle each group before asking for the next.
        """
        clients = sorted(messages)
        chunk = max(1, len(clients) if self._cache is None else self._cache)
        for start in range(0, len(clients), chunk):
            groups: dict[Hashable, list[int]] = {}
            for client in clients[start : start + chunk]:
                logic = self._logic(client)
                key = logic.batch_key(messages[client])
                groups.setdefault(client if key is None else (type(logic), key), []).append(client)
            yield from groups.values()

    def handle_batch(self, messages: Mapping[int, Message], rnd: int) -> dict[int, Message]:
        """Let the clients of ``messages`` (of one :meth:`batches` group) handle them together; their replies."""
        clients = sorted(messages)
        jobs = [
            ClientJob(
                self._logic(client),
                messages[client].read_only(),
                self.states.get(client),
                ClientContext(client, rnd, derive_seed(self._seed, rnd, client, "client")),
            )
            for client in clients
        ]
        if len(jobs) == 1:
            job = jobs[0]
            replies = [job.logic.handle(job.message, job.state, job.context)]
        else:
            replies = jobs[0].logic.handle_many(jobs)
        return {client: reply.read_only() for client, reply in zip(clients, replies, strict=True)}

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
