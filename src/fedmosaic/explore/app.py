"""The explorer's web app: one page and two JSON endpoints, all computed by an :class:`Explorer`.

* ``GET /`` — the page (:mod:`fedmosaic.explore.page`), which loads nothing else.
* ``GET /api/model`` — :meth:`Explorer.description`.
* ``POST /api/answer`` — body ``{"features": [...], "set": {concept: category}}``;
  the :class:`~fedmosaic.explore.session.Answer` as JSON, or
  ``{"error": "..."}`` with status 400 on bad input.
"""

from __future__ import annotations

import dataclasses
import json

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from fedmosaic.errors import FedmosaicError
from fedmosaic.explore.page import PAGE
from fedmosaic.explore.session import Explorer


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
        try:
            body = json.loads(await request.body())
            features = [float(value) for value in body["features"]]
            settings = {str(k): str(v) for k, v in dict(body.get("set") or {}).items()}
            found = await run_in_threadpool(explorer.answer, features, settings)
        except (FedmosaicError, ValueError, TypeError, KeyError) as error:
            return JSONResponse({"error": _one_line(error)}, status_code=400)
        return JSONResponse(dataclasses.asdict(found))

    return Starlette(
        routes=[Route("/", page), Route("/api/model", model), Route("/api/answer", answer, methods=["POST"])]
    )


def _one_line(error: Exception) -> str:
    text = str(error) if not isinstance(error, KeyError) else f"missing field {error}"
    return " ".join(text.split())
