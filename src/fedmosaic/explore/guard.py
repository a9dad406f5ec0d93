"""What the explorer answers: requests made to it, as it, from its own page; every other request refused.

The explorer listens on 127.0.0.1 only, yet a web page elsewhere can still
reach it through the user's browser: by making its own name resolve to
127.0.0.1 (DNS rebinding: the request carries the page's name as ``Host``),
or by posting to it from another origin (a cross-origin ``text/plain`` POST
needs no preflight). :class:`LoopbackGuard` refuses, before the app sees them:

* a request target in absolute form (``POST http://elsewhere/api/answer``),
  which names another host than the ``Host`` header;
* no ``Host`` header, more than one, or one that is not exactly
  ``127.0.0.1`` or ``localhost`` with an optional port (no padding);
* an ``Origin`` header that is not the page's own (``http://`` and the Host).

The server parses requests with h11 (:func:`~fedmosaic.explore.serve.server`),
which passes an absolute-form target on to the app as it came, refuses
duplicate ``Host`` headers itself, and strips the whitespace around a header's
value (not part of the value, RFC 9110): padding left inside the value, or
passed on by another server, is refused here.
"""

from __future__ import annotations

import re

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_HOST = re.compile(r"(127\.0\.0\.1|localhost)(:[0-9]{1,5})?")
"""The ``Host`` values the explorer answers, matched whole."""


def refusal(scope: Scope) -> tuple[int, str] | None:
    """The status and reason to refuse an HTTP request with, or None to answer it.

    Examples
    --------
    >>> scope = {"path": "/api/model", "headers": [(b"host", b"127.0.0.1:8765")]}
    >>> refusal(scope) is None
    True
    >>> refusal({**scope, "headers": [(b"host", b"127.0.0.1:8765 ")]})
    (400, "Host '127.0.0.1:8765 ' refused: the explorer answers 127.0.0.1 or localhost only")
    >>> refusal({**scope, "headers": [*scope["headers"], (b"origin", b"http://evil.example")]})
    (403, "Origin 'http://evil.example' refused: the explorer answers its own page only")
    """
    target = scope.get("raw_path") or scope["path"].encode()
    if not target.startswith(b"/"):
        return 400, "a request target in absolute form is refused: send the path only, with a Host header"
    hosts = [value for name, value in scope["headers"] if name == b"host"]
    if len(hosts) != 1:
        return 400, f"expected one Host header, got {len(hosts)}"
    host = hosts[0].decode("latin-1")
    if not LOOPBACK_HOST.fullmatch(host):
        return 400, f"Host {host!r} refused: the explorer answers 127.0.0.1 or localhost only"
    origins = [value.decode("latin-1") for name, value in scope["headers"] if name == b"origin"]
    if len(origins) > 1:
        return 403, f"expected at most one Origin header, got {len(origins)}"
    if origins and origins[0] != f"http://{host}":
        return 403, f"Origin {origins[0]!r} refused: the explorer answers its own page only"
    return None


class LoopbackGuard:
    """ASGI middleware answering :func:`refusal`'s requests with their status, passing every other on to ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse or pass on one connection's request."""
        refused = refusal(scope) if scope["type"] == "http" else None
        if refused is not None:
            await PlainTextResponse(refused[1], status_code=refused[0])(scope, receive, send)
            return
        await self.app(scope, receive, send)
