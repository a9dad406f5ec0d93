"""Federation runtime: messages, grids, engines, schedules, checkpoints.

This layer knows no method: server and client logic written against it run
unchanged on every engine. Importing the package imports none of its modules: each
name below loads its own module when first used, so a command that only reads a
configuration never loads the runtime (nor Flower, which secure aggregation uses).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fedmosaic.federation.aggregate import weighted_average
    from fedmosaic.federation.federation import Federation
    from fedmosaic.federation.grid import Grid
    from fedmosaic.federation.hostile import ATTACKS, HostileGrid, hostile_clients
    from fedmosaic.federation.inprocess import InProcessGrid
    from fedmosaic.federation.logic import ClientContext, ClientJob, ClientLogic, ServerLogic
    from fedmosaic.federation.message import Message
    from fedmosaic.federation.record import RoundRecord
    from fedmosaic.federation.round import QuorumNotMet, RoundContext
    from fedmosaic.federation.schedule import Schedule
    from fedmosaic.federation.state import ClientState, ServerState
    from fedmosaic.federation.validation import ArraySpec, ReplyLimits, ReplySpec, check_reply, label_means_check
    from fedmosaic.seeding import derive_rng, derive_seed

__all__ = [
    "ATTACKS",
    "ArraySpec",
    "ClientContext",
    "ClientJob",
    "ClientLogic",
    "ClientState",
    "Federation",
    "Grid",
    "HostileGrid",
    "InProcessGrid",
    "Message",
    "QuorumNotMet",
    "ReplyLimits",
    "ReplySpec",
    "RoundContext",
    "RoundRecord",
    "Schedule",
    "ServerLogic",
    "ServerState",
    "check_reply",
    "derive_rng",
    "derive_seed",
    "hostile_clients",
    "label_means_check",
    "weighted_average",
]

_HOMES = {
    "weighted_average": "fedmosaic.federation.aggregate",
    "Federation": "fedmosaic.federation.federation",
    "Grid": "fedmosaic.federation.grid",
    "ATTACKS": "fedmosaic.federation.hostile",
    "HostileGrid": "fedmosaic.federation.hostile",
    "hostile_clients": "fedmosaic.federation.hostile",
    "InProcessGrid": "fedmosaic.federation.inprocess",
    "ClientContext": "fedmosaic.federation.logic",
    "ClientJob": "fedmosaic.federation.logic",
    "ClientLogic": "fedmosaic.federation.logic",
    "ServerLogic": "fedmosaic.federation.logic",
    "Message": "fedmosaic.federation.message",
    "RoundRecord": "fedmosaic.federation.record",
    "QuorumNotMet": "fedmosaic.federation.round",
    "RoundContext": "fedmosaic.federation.round",
    "Schedule": "fedmosaic.federation.schedule",
    "ClientState": "fedmosaic.federation.state",
    "ServerState": "fedmosaic.federation.state",
    "ArraySpec": "fedmosaic.federation.validation",
    "ReplyLimits": "fedmosaic.federation.validation",
    "ReplySpec": "fedmosaic.federation.validation",
    "check_reply": "fedmosaic.federation.validation",
    "label_means_check": "fedmosaic.federation.validation",
    "derive_rng": "fedmosaic.seeding",
    "derive_seed": "fedmosaic.seeding",
}
"""Each exported name -> the module that defines it."""


def __getattr__(name: str) -> Any:
    """An exported name, imported from its module on first use (``from fedmosaic.federation import Grid``)."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
