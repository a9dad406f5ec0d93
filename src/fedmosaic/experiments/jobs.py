"""Combine the histories of a run's federations into the run's history.

The baselines reuse the method's own server and client logic: *centralized*
is a one-client federation over the pooled training data, *local* is one
one-client federation per client over its own data
(:mod:`fedmosaic.experiments.workloads` makes them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedmosaic.federation import RoundRecord


def combine(setting: str, histories: list[list[RoundRecord]], pooled_bytes: int = 0) -> list[dict[str, Any]]:
    """One history for a run from the histories of its jobs.

    Centralized: the pooled data (``pooled_bytes``) is what would cross party
    boundaries, so it is counted as bytes up in round 1 and the one-client
    federation's own messages (internal to one site) are not counted. Local:
    nothing crosses a boundary; metrics are the mean over clients with
    ``<metric>_std``; a client that stopped early counts with its last round's
    metrics, while the wall time, replies and sampled clients of a round are
    those of the clients that ran it.
    """
    if setting == "federated":
        return [record.to_dict() for record in histories[0]]
    if setting == "centralized":
        rows = [record.to_dict() | {"bytes_up": 0, "bytes_down": 0} for record in histories[0]]
        rows[0]["bytes_up"] = pooled_bytes
        return rows
    length = max(len(h) for h in histories)
    return [
        _mean_over_clients([h[min(i, len(h) - 1)] for h in histories], [h[i] for h in histories if i < len(h)], i + 1)
        for i in range(length)
    ]


def _mean_over_clients(latest: list[RoundRecord], ran: list[RoundRecord], rnd: int) -> dict[str, Any]:
    """Round ``rnd`` of a local run: metrics of every client's ``latest`` record, the rest of those that ``ran`` it."""
    keys = sorted(set.intersection(*(set(r.metrics) for r in latest)))
    metrics: dict[str, float] = {}
    for key in keys:
        values = np.array([r.metrics[key] for r in latest])
        metrics[key] = float(values.mean())
        metrics[f"{key}_std"] = float(values.std())
    skipped = [r for r in ran if r.status != "ok"]
    return {
        "round": rnd,
        "status": "ok" if not skipped else "skipped",
        "clients_sampled": len(ran),
        "replies": sum(r.replies for r in ran),
        "dropped": [],
        "bytes_up": 0,
        "bytes_down": 0,
        "trips": 0,
        "wall_time_s": sum(r.wall_time_s for r in ran),
        "metrics": metrics,
        "reason": "; ".join(r.reason for r in skipped),
    }
