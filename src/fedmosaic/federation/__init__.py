"""Federation runtime: messages, grids, engines, schedules, checkpoints.

This layer knows no method: server and client logic written against it run
unchanged on every engine.
"""

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
