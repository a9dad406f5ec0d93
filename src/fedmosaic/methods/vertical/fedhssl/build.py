"""FedHSSL's builder: the active party's server logic and a passive party per client."""

from __future__ import annotations

from fedmosaic.methods.base import Built
from fedmosaic.methods.vertical.fedhssl.client import FedHSSLClient
from fedmosaic.methods.vertical.fedhssl.params import FedHSSLParams
from fedmosaic.methods.vertical.fedhssl.server import FedHSSLServer
from fedmosaic.methods.vertical.task import VerticalTask


def build_fedhssl(task: VerticalTask, params: FedHSSLParams) -> Built:
    """FedHSSL: the active party's server logic and a passive party per client."""
    return FedHSSLServer(task, params), lambda client: FedHSSLClient(client + 1, task.data.splits, params)
