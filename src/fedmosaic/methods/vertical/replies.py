"""What a passive party's reply may contain, exchange by exchange (the vertical protocol's specs).

Every reply of a vertical method is per row by design (the declared latents of
vertical FL), so its specs fix the exact row count the active party asked for:
the rows of the request the party holds, or every requested row where the
protocol says so. Values are float32 (the parties' networks), finite, and
FALSE-VFL's log-variances stand for positive finite variances.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fedmosaic.federation.validation import ArraySpec, ReplySpec, log_variance_check

FLOAT = "float32"


def posterior_spec(rows: int, latent: int, kind: str) -> ReplySpec:
    """FALSE-VFL ``posterior``: ``mean`` and ``logvar`` ``(rows, latent)`` of the rows the party holds."""
    block = ArraySpec((rows, latent), FLOAT)
    return ReplySpec(arrays={"mean": block, "logvar": block}, kind=kind, checks=(log_variance_check("logvar"),))


def loglik_spec(samples: int, rows: int, latent: int, kind: str, *, jacobian: bool) -> ReplySpec:
    """FALSE-VFL ``loglik``: one log-likelihood per sample and row, with its gradient in ``h`` if asked."""
    arrays = {"loglik": ArraySpec((samples, rows), FLOAT)}
    if jacobian:
        arrays["dloglik_dh"] = ArraySpec((samples, rows, latent), FLOAT)
    return ReplySpec(arrays=arrays, kind=kind)


def embedding_spec(rows: int, width: int, kind: str) -> ReplySpec:
    """Split baselines ``embed``: ``embedding`` ``(rows, width)``."""
    return ReplySpec(arrays={"embedding": ArraySpec((rows, width), FLOAT)}, kind=kind)


def views_spec(rows: int, width: int, kind: str) -> ReplySpec:
    """FedHSSL ``cross``: ``projection`` and ``prediction`` ``(rows, width)`` of the aligned rows asked for."""
    block = ArraySpec((rows, width), FLOAT)
    return ReplySpec(arrays={"projection": block, "prediction": block}, kind=kind)


def top_layers_spec(template: Mapping[str, np.ndarray], kind: str) -> ReplySpec:
    """FedHSSL ``local``: the party's top layers, named and shaped as ``template`` (the active party's)."""
    return ReplySpec.like(template, kind=kind)


def acknowledgement_spec(kind: str) -> ReplySpec:
    """``update``: an empty reply of the message's kind."""
    return ReplySpec(kind=kind)
