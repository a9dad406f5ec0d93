"""Persistent worker processes that serve requests, with a clean shutdown in every case.

Workers are forked from the calling process, so they start in milliseconds
and share everything already loaded (datasets, client factories) page for
page until one side writes to it: nothing is pickled to start them. Each
worker answers one request at a time; while working it may stream events
(progress) back. A worker runs in a session of its own, ignores Ctrl-C (the
parent decides), dies with its parent, and stops when its pipe closes; :meth:`WorkerPool.close` ends them
all, politely after normal use and at once after an error or an interrupt.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import traceback
import weakref
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any, Protocol

from fedmosaic.errors import FedmosaicError

_STOP = "stop"
_PR_SET_PDEATHSIG = 1


class WorkerFailed(FedmosaicError):
    """A request failed inside a worker, or a worker stopped unexpectedly."""


class Handler(Protocol):
    """What a worker runs: ``handler(request, emit) -> result``; ``emit(event)`` streams an event."""

    def __call__(self, request: Any, emit: Callable[[Any], None]) -> Any:
        """Handle ``request``, streaming events through ``emit``; the result is sent back."""


def fork_available() -> bool:
    """Whether worker processes can be forked here (Linux and other POSIX systems)."""
    return "fork" in multiprocessing.get_all_start_methods()


class WorkerPool:
    """``count`` forked processes, worker ``i`` running ``make_handler(i)``.

    Parameters
    ----------
    make_handler : callable int -> Handler
        Called inside each worker after the fork to build what serves its requests.
    count : int
        Number of workers.
    setup : callable or None, default None
        Called first inside each worker (e.g. to set the number of threads).
    daemon : bool, default True
        Daemon workers are also ended when the parent exits; a worker that
        starts processes of its own must not be a daemon.

    Examples
    --------
    >>> with WorkerPool(lambda i: lambda request, emit: request * 10 + i, 2) as pool:
    ...     pool.submit(0, 1); pool.submit(1, 2)
    ...     sorted(pool.results())
    [(0, 10), (1, 21)]
    """

    def __init__(
        self,
        make_handler: Callable[[int], Handler],
        count: int,
        *,
        setup: Callable[[], None] | None = None,
        daemon: bool = True,
    ) -> None:
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count}")
        if not fork_available():
            raise FedmosaicError("worker processes need the fork start method, which this system lacks")
        context = multiprocessing.get_context("fork")
        self._connections: list[Connection] = []
        self._processes: list[BaseProcess] = []
        self._busy: set[int] = set()
        parent = os.getpid()
        for index in range(count):
            mine, theirs = context.Pipe()
            inherited = [*self._connections, mine]
            process = context.Process(
                target=_serve,
                args=(index, theirs, inherited, make_handler, setup, parent),
                name=f"fedmosaic-worker-{index}",
                daemon=daemon,
            )
            process.start()
            theirs.close()
            self._connections.append(mine)
            self._processes.append(process)
        self._finalizer = weakref.finalize(self, _stop, self._processes, self._connections, True)

    @property
    def size(self) -> int:
        """Number of workers."""
        return len(self._processes)

    def pids(self) -> list[int]:
        """Process ids of the workers."""
        return [int(p.pid or 0) for p in self._processes]

    def submit(self, worker: int, request: Any) -> None:
        """Send ``request`` to ``worker`` (which must be idle)."""
        if worker in self._busy:
            raise RuntimeError(f"worker {worker} is still busy")
        self._connections[worker].send(request)
        self._busy.add(worker)

    @property
    def idle(self) -> list[int]:
        """Workers with no request in progress."""
        return [i for i in range(self.size) if i not in self._busy]

    def results(
        self, on_event: Callable[[int, Any], None] | None = None, *, first: bool = False
    ) -> Iterator[tuple[int, Any]]:
        """Yield ``(worker, result)`` as busy workers finish (all of them, or only the first with ``first``).

        Events a worker emits meanwhile go to ``on_event(worker, event)``.

        Raises
        ------
        WorkerFailed
            When a request raised inside a worker (one line naming the error;
            the worker's traceback is attached as a note) or a worker stopped.
        """
        while self._busy:
            by_connection = {self._connections[i]: i for i in self._busy}
            by_sentinel = {self._processes[i].sentinel: i for i in self._busy}
            ready = wait([*by_connection, *by_sentinel])
            for item in ready:
                if item in by_sentinel and self._connections[by_sentinel[item]] not in ready:
                    worker = by_sentinel[item]
                    if not self._connections[worker].poll():
                        code = self._processes[worker].exitcode
                        raise WorkerFailed(f"worker process {worker} stopped unexpectedly (exit code {code})")
            for connection in (c for c in ready if c in by_connection):
                worker = by_connection[connection]
                try:
                    kind, *payload = connection.recv()
                except (EOFError, OSError):
                    code = self._processes[worker].exitcode
                    raise WorkerFailed(f"worker process {worker} stopped unexpectedly (exit code {code})") from None
                if kind == "event":
                    if on_event is not None:
                        on_event(worker, payload[0])
                    continue
                self._busy.discard(worker)
                if kind == "error":
                    message, details = payload
                    error = WorkerFailed(message)
                    error.add_note(details)
                    raise error
                yield worker, payload[0]
                if first:
                    return

    def close(self, *, abort: bool = False) -> None:
        """Stop the workers: ask them to finish, or with ``abort`` terminate them at once."""
        self._finalizer.detach()
        _stop(self._processes, self._connections, abort or bool(self._busy))
        self._busy.clear()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, error_type: object, *exc: object) -> None:
        self.close(abort=error_type is not None)


def _stop(processes: Sequence[BaseProcess], connections: Sequence[Connection], abort: bool) -> None:
    if not abort:
        for connection in connections:
            with contextlib.suppress(OSError, ValueError):  # the worker is already gone
                connection.send(_STOP)
        for process in processes:
            process.join(timeout=5)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)
        if process.is_alive():
            process.kill()
            process.join()
    for connection in connections:
        connection.close()


def _serve(
    index: int,
    connection: Connection,
    inherited: list[Connection],
    make_handler: Callable[[int], Handler],
    setup: Callable[[], None] | None,
    parent: int,
) -> None:
    for other in inherited:
        other.close()
    _fresh_standard_streams()
    _own_session()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent(parent)
    if setup is not None:
        setup()
    handler = make_handler(index)

    def emit(event: Any) -> None:
        connection.send(("event", event))

    while True:
        try:
            request = connection.recv()
        except (EOFError, OSError):
            return
        if isinstance(request, str) and request == _STOP:
            return
        try:
            result = handler(request, emit)
        except Exception as error:  # noqa: BLE001 - reported to the parent, which raises it there
            connection.send(("error", _one_line(error), traceback.format_exc()))
        else:
            connection.send(("ok", result))


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if not isinstance(error, FedmosaicError) else text


def _fresh_standard_streams() -> None:
    """New stdout/stderr objects on the same descriptors.

    A thread of the parent (a progress display) may have held their locks
    at the moment of the fork; the child's copies would stay locked forever.
    """
    with contextlib.suppress(OSError):  # no such descriptor: keep the inherited objects
        # They replace the process's streams for its lifetime: no context manager can own them.
        sys.stdout = open(1, "w", closefd=False, buffering=1)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115


def _own_session() -> None:
    """Start a session of its own, as Ray's workers do.

    Where the kernel shares the CPU between sessions first (Linux autogroup,
    the default of desktop systems), workers in the parent's session would
    split one share between them on a busy machine; each in its own session
    gets one share per worker. The parent still stops them (and they die
    with it), and they ignore the terminal's Ctrl-C in any case.
    """
    with contextlib.suppress(OSError):  # already a session leader
        os.setsid()


def _die_with_parent(parent: int) -> None:
    """Ask the kernel to end this process when its parent dies (Linux); exit if it already has."""
    with contextlib.suppress(OSError, AttributeError):  # no prctl (not Linux): the os.getppid check below remains
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:
        os._exit(1)
