"""SCAFFOLD's builder: the server and the client factory of a classification task."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fedmosaic.methods.base import Built
from fedmosaic.methods.horizontal.scaffold.client import ScaffoldClient
from fedmosaic.methods.horizontal.scaffold.params import ScaffoldParams
from fedmosaic.methods.horizontal.scaffold.server import ScaffoldServer

if TYPE_CHECKING:  # the registry imports this module
    from fedmosaic.methods.horizontal.task import HorizontalTask


def build_scaffold(task: HorizontalTask, params: ScaffoldParams) -> Built:
    """SCAFFOLD's server and client factory for a classification task.

    Examples
    --------
    >>> import numpy as np
    >>> from fedmosaic.data.arrays import ArrayDataset
    >>> from fedmosaic.methods.horizontal.models import ModelParams
    >>> from fedmosaic.methods.horizontal.task import HorizontalTask
    >>> from fedmosaic.methods.train_params import TrainParams
    >>> data = ArrayDataset(np.zeros((4, 3), np.float32), np.array([0, 1, 0, 1]), num_classes=2)
    >>> task = HorizontalTask([data, data], data, ModelParams(hidden=[4]), TrainParams())
    >>> server, clients = build_scaffold(task, ScaffoldParams())
    >>> type(server).__name__, type(clients(0)).__name__
    ('ScaffoldServer', 'ScaffoldClient')
    """
    factory = task.model_factory()
    server = ScaffoldServer(factory, task.test, len(task.clients), params, task.pretraining(), task.probes)
    return server, lambda client: ScaffoldClient(factory, task.clients[client], task.train)
