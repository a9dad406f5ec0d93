"""FALSE-VFL's builder: the active party's server logic and a passive party per client."""

from __future__ import annotations

from functools import partial

from fedmosaic.methods.base import Built
from fedmosaic.methods.vertical.false_vfl.active import party_model
from fedmosaic.methods.vertical.false_vfl.client import FalseVFLClient
from fedmosaic.methods.vertical.false_vfl.params import FalseVFLParams
from fedmosaic.methods.vertical.false_vfl.server import FalseVFLServer
from fedmosaic.methods.vertical.task import VerticalTask


def build_false_vfl(task: VerticalTask, params: FalseVFLParams) -> Built:
    """FALSE-VFL: the active party's server logic and a passive party per client."""
    data = task.data

    def party(client: int) -> FalseVFLClient:
        build = partial(party_model, data.party_shapes[client + 1], params, data.likelihood, client + 1)
        return FalseVFLClient(client + 1, data.splits, build, params.optimizer_spec())

    return FalseVFLServer(task, params), party
