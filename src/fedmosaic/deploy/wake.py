"""A SuperNode tells its warm worker that a task is waiting, so the worker does not poll for one.

The worker (:mod:`fedmosaic.deploy.worker`) would otherwise ask its
SuperNode's Runtime API for a task every 0.2 s, an HTTP request that costs
both processes CPU while nothing happens: an idle deployment of 4 nodes
used most of a core on those asks alone. Instead, fedmosaic's SuperNode
launcher (:mod:`fedmosaic.deploy.supernode`) sends one empty datagram to a
named Unix socket each time the node has stored a message for its worker,
and the worker sleeps on that socket; it still asks every
:data:`FALLBACK_POLL_S` in case a signal was missed (a worker that starts
after the node stored a message asks at once).

The socket is in Linux's abstract namespace (no file, no path length to
mind); any local process could send to it, which only makes the worker ask
for a task once more: the task is still acquired with the node's secret.
"""

from __future__ import annotations

import contextlib
import secrets
import socket

FALLBACK_POLL_S = 2.0
"""Seconds between two asks for a task when no signal came (a signal lost is a trip at most this much slower)."""
PREFIX = "fedmosaic-wake-"


def new_wake_name() -> str:
    """A fresh socket name for one SuperNode and its worker (random, so two deployments never share one)."""
    return PREFIX + secrets.token_hex(8)


def _address(name: str) -> str:
    """The abstract-namespace address of ``name`` (a leading NUL byte: no file is made)."""
    return "\0" + name


class WakeListener:
    """The worker's end: waits until the SuperNode signals a task, or a time is up.

    Parameters
    ----------
    name : str
        The socket's name (:func:`new_wake_name`), the same as the SuperNode's ``--wake-name``.

    Examples
    --------
    >>> name = new_wake_name()
    >>> with WakeListener(name) as listener:
    ...     send_wake(name)
    ...     listener.wait(1.0), listener.wait(0.01)
    (True, False)
    """

    def __init__(self, name: str) -> None:
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._socket.bind(_address(name))

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a signal; return whether one came (every waiting signal is consumed)."""
        self._socket.settimeout(timeout)
        try:
            self._socket.recv(1)
        except TimeoutError:
            return False
        self._socket.setblocking(False)
        try:
            while True:
                self._socket.recv(1)
        except BlockingIOError:
            return True

    def close(self) -> None:
        """Release the name."""
        self._socket.close()

    def __enter__(self) -> WakeListener:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def send_wake(name: str) -> None:
    """Signal the worker listening on ``name``; nothing happens if none listens (yet) or signals already wait."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
        sender.setblocking(False)
        # OSError: nobody bound the name (the worker is not started yet or is gone), or its queue is full
        with contextlib.suppress(OSError):
            sender.sendto(b"\1", _address(name))
