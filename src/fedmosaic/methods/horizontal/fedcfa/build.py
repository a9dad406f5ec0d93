"""Building FedCFA's server and clients from a horizontal classification task."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import torch
from torch import nn

from fedmosaic.methods.base import Built
from fedmosaic.methods.horizontal.fedcfa.client import FedCFAClient
from fedmosaic.methods.horizontal.fedcfa.params import FedCFAParams
from fedmosaic.methods.horizontal.fedcfa.server import FedCFAServer
from fedmosaic.methods.horizontal.fedcfa.split import default_split, split_model

if TYPE_CHECKING:  # the registry imports this module
    from fedmosaic.methods.horizontal.task import HorizontalTask


def build_fedcfa(task: HorizontalTask, params: FedCFAParams) -> Built:
    """FedCFA's server logic and client factory for ``task``.

    The split point is resolved and checked once, here, on a model of the
    task's architecture, as is the number of factors it gives (at least 2).

    Parameters
    ----------
    task : HorizontalTask
        Client data, test set, model architecture and training parameters.
    params : FedCFAParams
        Method parameters.

    Returns
    -------
    (FedCFAServer, callable int -> FedCFAClient)

    Raises
    ------
    TypeError
        If the model is not sequential.
    ValueError
        If the model cannot be split where ``params.split`` says, or the split
        gives fewer than 2 factors.

    Examples
    --------
    >>> import numpy as np
    >>> from fedmosaic.data.arrays import ArrayDataset
    >>> from fedmosaic.methods.horizontal.models import ModelParams
    >>> from fedmosaic.methods.horizontal.task import HorizontalTask
    >>> from fedmosaic.methods.train_params import TrainParams
    >>> data = ArrayDataset(np.zeros((4, 3), np.float32), np.array([0, 1, 0, 1]), num_classes=2)
    >>> task = HorizontalTask([data, data], data, ModelParams(hidden=[4]), TrainParams())
    >>> server, clients = build_fedcfa(task, FedCFAParams(k=2))
    >>> type(server).__name__, type(clients(1)).__name__
    ('FedCFAServer', 'FedCFAClient')
    """
    factory = task.model_factory()
    built = factory()
    params.check_model(built)  # the runner checks it before any run too; built here alone, it is checked here
    model = cast(nn.Sequential, built)  # check_model refuses anything else
    split = default_split(model) if params.split is None else params.split
    encoder, _ = split_model(model, split)
    with torch.no_grad():
        factors = encoder(torch.zeros(1, *task.test.x.shape[1:])).shape[1]
    params.replaced(factors)
    server = FedCFAServer(factory, task.test, params, task.pretraining(), task.probes)
    return server, lambda client: FedCFAClient(factory, task.clients[client], task.train, params, split)
