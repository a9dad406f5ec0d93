"""Turn one configured run into federations: federated, centralized or local.

The baselines reuse the method's own server and client logic: *centralized*
is a one-client federation over the pooled training data, *local* is one
one-client federation per client over its own data. Their histories are then
combined into one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.experiments.config import ExperimentConfig, FederationSection
from fedmosaic.federation import RoundRecord, Schedule


@dataclass(frozen=True)
class Job:
    """One federation to run.

    Parameters
    ----------
    label : str
        Identifies the job inside its run (checkpoint file name).
    clients : list of ArrayDataset
        The clients' training data.
    schedule : Schedule
        Who takes part when.
    """

    label: str
    clients: list[ArrayDataset]
    schedule: Schedule


def jobs_for(setting: str, config: ExperimentConfig, clients: list[ArrayDataset]) -> list[Job]:
    """The federations that make up a run in ``setting``."""
    if setting == "federated":
        return [Job("federated", clients, federated_schedule(config.federation, len(clients)))]
    if setting == "centralized":
        return [Job("centralized", [pool(clients)], Schedule(num_clients=1))]
    return [Job(f"client-{k}", [data], Schedule(num_clients=1)) for k, data in enumerate(clients)]


def federated_schedule(federation: FederationSection, num_clients: int) -> Schedule:
    """The schedule described by the ``[federation]`` section."""
    joins = {c: entry.round for entry in federation.arrivals for c in entry.clients}
    leaves = {c: entry.round for entry in federation.departures for c in entry.clients}
    failures: dict[int, frozenset[int]] = {}
    for entry in federation.failures:
        failures[entry.round] = failures.get(entry.round, frozenset()) | frozenset(entry.clients)
    return Schedule(
        num_clients=num_clients,
        fraction=federation.fraction,
        clients_per_round=federation.clients_per_round,
        joins=joins,
        leaves=leaves,
        dropout=federation.dropout,
        failures=failures,
        min_replies=federation.min_replies,
    )


def pool(clients: list[ArrayDataset]) -> ArrayDataset:
    """All clients' data in one dataset (the centralized baseline's)."""
    return ArrayDataset(
        x=np.concatenate([c.x for c in clients]),
        y=np.concatenate([c.y for c in clients]),
        num_classes=clients[0].num_classes,
    )


def combine(setting: str, histories: list[list[RoundRecord]], clients: list[ArrayDataset]) -> list[dict]:
    """One history for a run from the histories of its jobs.

    Centralized: the pooled data is what would cross party boundaries, so it
    is counted as bytes up in round 1 and the one-client federation's own
    messages (internal to one site) are not counted. Local: nothing crosses a
    boundary; metrics are the mean over clients with ``<metric>_std``.
    """
    if setting == "federated":
        return [record.to_dict() for record in histories[0]]
    if setting == "centralized":
        rows = [record.to_dict() | {"bytes_up": 0, "bytes_down": 0} for record in histories[0]]
        rows[0]["bytes_up"] = sum(int(c.x.nbytes + c.y.nbytes) for c in clients)
        return rows
    return [_mean_over_clients([h[i] for h in histories]) for i in range(len(histories[0]))]


def _mean_over_clients(records: list[RoundRecord]) -> dict:
    keys = sorted(set.intersection(*(set(r.metrics) for r in records)))
    metrics: dict[str, float] = {}
    for key in keys:
        values = np.array([r.metrics[key] for r in records])
        metrics[key] = float(values.mean())
        metrics[f"{key}_std"] = float(values.std())
    skipped = [r for r in records if r.status != "ok"]
    return {
        "round": records[0].round,
        "status": "ok" if not skipped else "skipped",
        "clients_sampled": len(records),
        "replies": sum(r.replies for r in records),
        "dropped": [],
        "bytes_up": 0,
        "bytes_down": 0,
        "trips": 0,
        "wall_time_s": sum(r.wall_time_s for r in records),
        "metrics": metrics,
        "reason": "; ".join(r.reason for r in skipped),
    }
