"""The in-process engine with parallel clients: a round's clients run in worker processes.

Each client always runs in the same worker (client ``c`` in worker ``c mod
workers``), which builds its logic once, keeps its state between rounds and
answers in ascending client order, handling its share of a round's messages
together where the method can (:meth:`~fedmosaic.federation.host.ClientHost.batches`); the replies are put back in ascending
client order. Every random draw is derived from (seed, round, client), so the
results are identical to :class:`~fedmosaic.federation.inprocess.InProcessGrid`'s.
Large arrays travel through shared memory (:mod:`fedmosaic.federation.shared`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from typing_extensions import override

from fedmosaic.errors import FedmosaicError
from fedmosaic.federation.grid import Grid
from fedmosaic.federation.host import ClientFactory, ClientHost
from fedmosaic.federation.message import Message
from fedmosaic.federation.processes import WorkerPool
from fedmosaic.federation.shared import SharedArrays, pack_arrays, remove_shared, unpack_arrays
from fedmosaic.federation.state import ClientState
from fedmosaic.threads import set_torch_threads

Packed = tuple[SharedArrays | None, dict[int, tuple[str, dict[str, Any], dict[str, float], dict[str, Any]]]]


class ClientFailed(FedmosaicError):
    """A client's logic raised while handling a message."""


class ParallelGrid(Grid):
    """Runs the clients in ``workers`` persistent worker processes.

    Parameters
    ----------
    client_factory : callable int -> ClientLogic
        Builds a client's logic; called inside the worker that runs the
        client (the workers are forked, so it needs no pickling).
    seed : int
        Experiment seed.
    workers : int
        Number of worker processes.
    threads : int, default 1
        PyTorch threads of each worker.
    cache : int or None, default None
        Most client logics each worker keeps built.
    state_budget_bytes : int or None, default None
        Memory for client states in each worker before they spill to disk.

    Notes
    -----
    Use it as a context manager (or call :meth:`close`): the workers stop
    with it, at once when the block ends with an error or an interrupt.
    """

    def __init__(
        self,
        client_factory: ClientFactory,
        seed: int,
        workers: int,
        *,
        threads: int = 1,
        cache: int | None = None,
        state_budget_bytes: int | None = None,
    ) -> None:
        # PyTorch's optimizers import torch._dynamo on their first step (1.5 s of CPU): imported here,
        # before the workers are forked, they share it instead of each importing it again, every job.
        import torch._dynamo  # noqa: F401

        self._prefix = f"fedmosaic-{os.getpid()}-{id(self):x}-"
        host = partial(ClientHost, client_factory, seed, cache=cache, state_budget_bytes=state_budget_bytes)
        self._pool = WorkerPool(
            lambda index: _WorkerHandler(host(), f"{self._prefix}{index}-"),
            workers,
            setup=lambda: set_torch_threads(threads),
        )
        self.delivered: list[tuple[int, int]] = []

    @property
    def workers(self) -> int:
        """Number of worker processes."""
        return self._pool.size

    def worker_of(self, client: int) -> int:
        """The worker that runs ``client``."""
        return client % self._pool.size

    @override
    def send_and_receive(
        self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int]
    ) -> dict[int, Message]:
        self.delivered.extend((rnd, client) for client in sorted(messages))
        handle, packed = _pack({c: m for c, m in messages.items() if c not in failing}, f"{self._prefix}down-")
        by_worker: dict[int, dict[int, Any]] = {}
        for client, entry in packed.items():
            by_worker.setdefault(self.worker_of(client), {})[client] = entry
        try:
            with self._guard():
                for worker, batch in by_worker.items():
                    self._pool.submit(worker, ("exchange", rnd, handle, batch))
                replies: dict[int, Message] = {}
                for _, reply in self._pool.results():
                    replies.update(_unpack(reply, unlink=True))
        finally:
            if handle is not None:
                handle.unlink()
        return {client: replies[client].read_only() for client in sorted(replies)}

    @override
    def client_states(self) -> dict[int, ClientState]:
        states: dict[int, ClientState] = {}
        with self._guard():
            for worker in range(self._pool.size):
                self._pool.submit(worker, ("states",))
            for _, held in self._pool.results():
                states.update(held)
        return dict(sorted(states.items()))

    @override
    def load_client_states(self, states: Mapping[int, ClientState]) -> None:
        with self._guard():
            for worker in range(self._pool.size):
                mine = {c: s for c, s in states.items() if self.worker_of(c) == worker}
                self._pool.submit(worker, ("load", mine))
            list(self._pool.results())  # wait until every worker has loaded its clients' states

    def close(self, *, abort: bool = False) -> None:
        """Stop the workers and delete any shared file left behind."""
        self._pool.close(abort=abort)
        remove_shared(self._prefix)

    @override
    def __exit__(self, *exc: object) -> None:
        self.close(abort=exc[0] is not None)

    def _guard(self) -> _AbortOnError:
        return _AbortOnError(self)


class _AbortOnError:
    """Stops the workers at once when the block raises (an error in a worker, Ctrl-C)."""

    def __init__(self, grid: ParallelGrid) -> None:
        self._grid = grid

    def __enter__(self) -> None:
        return None

    def __exit__(self, error_type: object, *exc: object) -> None:
        if error_type is not None:
            self._grid.close(abort=True)


class _WorkerHandler:
    """Serves a worker's requests: exchanges, state snapshots, state restores."""

    def __init__(self, host: ClientHost, prefix: str) -> None:
        self._host = host
        self._prefix = prefix

    def __call__(self, request: tuple[Any, ...], emit: Callable[[Any], None]) -> Any:
        kind, *args = request
        if kind == "states":
            return self._host.client_states()
        if kind == "load":
            self._host.load_client_states(args[0])
            return None
        rnd, handle, batch = args
        messages = _unpack((handle, batch), unlink=False)
        replies = {}
        for batch in self._host.batches(messages):
            try:
                replies.update(self._host.handle_batch({client: messages[client] for client in batch}, rnd))
            except Exception as error:
                detail = " ".join(str(error).split())
                who = f"client {batch[0]}" if len(batch) == 1 else f"one of clients {batch}"
                raise ClientFailed(f"{who} failed in round {rnd}: {type(error).__name__}: {detail}") from error
        self._host.states.trim()
        return _pack(replies, f"{self._prefix}up-")


def _pack(messages: Mapping[int, Message], prefix: str) -> Packed:
    handle, arrays = pack_arrays({c: m.arrays for c, m in messages.items()}, prefix)
    return handle, {c: (m.kind, dict(m.config), dict(m.metrics), arrays[c]) for c, m in messages.items()}


def _unpack(packed: Packed, *, unlink: bool) -> dict[int, Message]:
    handle, entries = packed
    attached = handle.attach() if handle is not None else []
    if handle is not None and unlink:
        handle.unlink()
    return {
        client: Message(arrays=unpack_arrays(arrays, attached), config=config, metrics=metrics, kind=kind)
        for client, (kind, config, metrics, arrays) in entries.items()
    }
