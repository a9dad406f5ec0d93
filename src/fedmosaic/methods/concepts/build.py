"""Building F-CMs' server and clients from a concept task."""

from __future__ import annotations

from fedmosaic.methods.base import Built
from fedmosaic.methods.concepts.client import FCMClient
from fedmosaic.methods.concepts.params import FCMParams
from fedmosaic.methods.concepts.server import FCMServer
from fedmosaic.methods.concepts.task import ConceptTask


def build_fcm(task: ConceptTask, params: FCMParams) -> Built:
    """F-CMs' server logic and a client per concept-labeled client of ``task``."""
    server = FCMServer(task, params)
    return server, lambda client: FCMClient(task.clients[client], params, task.train, task.cardinalities)
