"""Serve the explorer on 127.0.0.1 with uvicorn, on a socket bound before the server starts."""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable

import uvicorn

from fedmosaic.errors import FedmosaicError
from fedmosaic.explore.app import create_app
from fedmosaic.explore.session import Explorer

HOST = "127.0.0.1"
"""The only address the explorer listens on."""


def bind(port: int) -> socket.socket:
    """Bind a listening socket on ``127.0.0.1:port`` (0: any free port).

    Raises
    ------
    FedmosaicError
        If the port is in use or cannot be bound (field ``--port``).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((HOST, port))
    except OSError as error:
        sock.close()
        reason = "is in use" if error.errno == errno.EADDRINUSE else f"cannot be bound ({error.strerror})"
        raise FedmosaicError(f"--port: {HOST}:{port} {reason}; pick another port, or 0 for any free one") from None
    sock.listen(128)
    return sock


def serve(explorer: Explorer, port: int, announce: Callable[[str], None]) -> None:
    """Serve ``explorer`` until interrupted, after announcing its address with ``announce``.

    Parameters
    ----------
    explorer : Explorer
        What to serve.
    port : int
        Port on 127.0.0.1; 0 for any free one.
    announce : callable
        Called once with the page's URL when the socket is bound.
    """
    sock = bind(port)
    announce(f"http://{HOST}:{sock.getsockname()[1]}/")
    try:
        server(explorer).run(sockets=[sock])
    finally:
        sock.close()


def server(explorer: Explorer) -> uvicorn.Server:
    """The HTTP server of ``explorer``'s app, to run on a bound socket.

    It parses requests with h11, which hands an absolute-form request target
    to the app as it came (httptools keeps only its path, so the app could not
    refuse it) and refuses duplicate ``Host`` headers.
    """
    config = uvicorn.Config(create_app(explorer), http="h11", ws="none", log_level="warning", access_log=False)
    return uvicorn.Server(config)
