"""One federation to run (:class:`Job`) and the schedule of a federated setting.

Every workload (classification, concepts, vertical, sites' own tables) turns
a run's setting into jobs; they share this module, which depends on no
workload.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fedmosaic.experiments.config import FederationSection
from fedmosaic.federation import Schedule


@dataclass(frozen=True)
class Job:
    """One federation to run.

    Parameters
    ----------
    label : str
        Identifies the job inside its run (checkpoint file name).
    task : object
        What the method is built from (``HorizontalTask`` or ``ConceptTask``).
    schedule : Schedule
        Who takes part when.
    pooled_bytes : int, default 0
        Bytes of raw data pooled at one site (the centralized baseline).
    """

    label: str
    task: Any
    schedule: Schedule
    pooled_bytes: int = 0


def federated_schedule(
    federation: FederationSection, num_clients: int, joins: dict[int, int] | None = None
) -> Schedule:
    """The schedule of the ``[federation]`` section, with the workload's own arrivals."""
    arrivals = dict(joins or {})
    arrivals.update({c: entry.round for entry in federation.arrivals for c in entry.clients})
    leaves = {c: entry.round for entry in federation.departures for c in entry.clients}
    failures: dict[int, frozenset[int]] = {}
    for entry in federation.failures:
        failures[entry.round] = failures.get(entry.round, frozenset()) | frozenset(entry.clients)
    return Schedule(
        num_clients=num_clients,
        fraction=federation.fraction,
        clients_per_round=federation.clients_per_round,
        joins=arrivals,
        leaves=leaves,
        dropout=federation.dropout,
        failures=failures,
        min_replies=federation.min_replies,
    )
