"""FedAvg's and FedProx's builders: the server and the client factory of a classification task."""

from __future__ import annotations

from fedmosaic.methods.base import Built
from fedmosaic.methods.horizontal.fedavg.client import FedAvgClient
from fedmosaic.methods.horizontal.fedavg.params import FedAvgParams, FedProxParams
from fedmosaic.methods.horizontal.fedavg.server import FedAvgServer
from fedmosaic.methods.horizontal.task import HorizontalTask


def build_fedavg(task: HorizontalTask, params: FedAvgParams) -> Built:
    """FedAvg's server and client factory for a classification task."""
    return _build_proximal(task, mu=0.0)


def build_fedprox(task: HorizontalTask, params: FedProxParams) -> Built:
    """FedProx's server and client factory: FedAvg's, with the clients' proximal term ``mu``."""
    return _build_proximal(task, mu=params.mu)


def _build_proximal(task: HorizontalTask, *, mu: float) -> Built:
    factory = task.model_factory()
    server = FedAvgServer(factory, task.test, task.pretraining(), task.probes)
    return server, lambda client: FedAvgClient(factory, task.clients[client], task.train, mu=mu)
