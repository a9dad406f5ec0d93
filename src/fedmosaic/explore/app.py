"""The explorer's web app: one page and two JSON endpoints, all computed by an :class:`Explorer`.

* ``GET /`` — the page (:mod:`fedmosaic.explore.page`), which loads nothing else.
* ``GET /api/model`` — :meth:`Explorer.description`.
* ``POST /api/answer`` — body ``{"features": [...], "set": {concept: category}}``;
  the :class:`~fedmosaic.explore.session.Answer` as JSON, or
  ``{"error": "..."}`` with status 400 on bad input (413 for a body over
  :data:`MAX_BODY_BYTES`).

Requests not made to the explorer as 127.0.0.1 or localhost from its own page
are refused (:mod:`fedmosaic.explore.guard`).
"""

from __future__ import annotations

import dataclasses
import json
import math

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from fedmosaic.errors import FedmosaicError
from fedmosaic.explore.guard import LoopbackGuard
from fedmosaic.explore.page import PAGE
from fedmosaic.explore.session import Explorer

MAX_BODY_BYTES = 1 << 20
"""The largest request body the explorer reads (a row of features is a few kilobytes)."""


def create_app(explorer: Explorer) -> Starlette:
    """Return the explorer's app over ``explorer``.

    Examples
    --------
    >>> from starlette.testclient import TestClient                 # doctest: +SKIP
    >>> client = TestClient(create_app(open_run(Path("runs/demo"))))  # doctest: +SKIP
    >>> client.get("/api/model").json()["task"]                       # doctest: +SKIP
    'dysp'
    """

    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse(PAGE, headers={"Content-Security-Policy": "default-src 'self' 'unsafe-inline'"})

    async def model(request: Request) -> JSONResponse:
        return JSONResponse(explorer.description())

    async def answer(request: Request) -> JSONResponse:
        body = await _limited_body(request)
        if body is None:
            return JSONResponse({"error": f"request body over {MAX_BODY_BYTES} bytes"}, status_code=413)
        try:
            features, settings = _question(json.loads(body))
            found = await run_in_threadpool(explorer.answer, features, settings)
        except (FedmosaicError, ValueError, TypeError, KeyError, RecursionError) as error:
            return JSONResponse({"error": _one_line(error)}, status_code=400)
        return JSONResponse(dataclasses.asdict(found))

    return Starlette(
        routes=[Route("/", page), Route("/api/model", model), Route("/api/answer", answer, methods=["POST"])],
        middleware=[Middleware(LoopbackGuard)],
    )


async def _limited_body(request: Request) -> bytes | None:
    """The request's body, or None past :data:`MAX_BODY_BYTES` (read no further)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _question(body: object) -> tuple[list[float], dict[str, str]]:
    """The features and concept settings of an answer's body, checked for their types.

    Examples
    --------
    >>> _question({"features": [1, 0.5], "set": {"smoke": "yes"}})
    ([1.0, 0.5], {'smoke': 'yes'})
    >>> _question({"features": "12"})
    Traceback (most recent call last):
    ...
    ValueError: features: expected an array of numbers
    """
    if not isinstance(body, dict):
        raise ValueError("expected a JSON object with features and set")
    features, settings = body["features"], body.get("set") or {}
    if not isinstance(features, list) or not all(_is_number(value) for value in features):
        raise ValueError("features: expected an array of numbers")
    if not isinstance(settings, dict) or not all(isinstance(value, str) for value in settings.values()):
        raise ValueError("set: expected an object of concept names to category names")
    return [_finite(value, index) for index, value in enumerate(features)], {str(k): v for k, v in settings.items()}


def _finite(value: float, index: int) -> float:
    """``value`` as a float, refused past float range or not finite (a 401-digit integer, ``1e400``, ``NaN``).

    Examples
    --------
    >>> _finite(10**400, 3)
    Traceback (most recent call last):
    ...
    ValueError: features.3: a number out of range (finite, within ±1.8e308)
    """
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ValueError(f"features.{index}: a number out of range (finite, within ±1.8e308)")
    return number


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _one_line(error: Exception) -> str:
    text = str(error) if not isinstance(error, KeyError) else f"missing field {error}"
    return " ".join(text.split())
