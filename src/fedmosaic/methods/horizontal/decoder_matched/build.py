"""The builder of FedAvg with a matched decoder step: FedAvg's server, the decoder-matched client."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fedmosaic.methods.base import Built
from fedmosaic.methods.horizontal.decoder_matched.client import DecoderMatchedClient
from fedmosaic.methods.horizontal.decoder_matched.params import DecoderMatchedParams
from fedmosaic.methods.horizontal.fedavg.server import FedAvgServer
from fedmosaic.methods.horizontal.fedcfa.split import split_model

if TYPE_CHECKING:  # the registry imports this module
    from fedmosaic.methods.horizontal.task import HorizontalTask


def build_decoder_matched(task: HorizontalTask, params: DecoderMatchedParams) -> Built:
    """The server (FedAvg's) and client factory of FedAvg with a matched decoder step.

    Raises
    ------
    TypeError
        If the model is not sequential.
    ValueError
        If the model cannot be split where ``params.split`` says.

    Examples
    --------
    >>> import numpy as np
    >>> from fedmosaic.data.arrays import ArrayDataset
    >>> from fedmosaic.methods.horizontal.models import ModelParams
    >>> from fedmosaic.methods.horizontal.task import HorizontalTask
    >>> from fedmosaic.methods.train_params import TrainParams
    >>> data = ArrayDataset(np.zeros((4, 3), np.float32), np.array([0, 1, 0, 1]), num_classes=2)
    >>> task = HorizontalTask([data, data], data, ModelParams(hidden=[4]), TrainParams())
    >>> server, clients = build_decoder_matched(task, DecoderMatchedParams())
    >>> type(server).__name__, type(clients(0)).__name__
    ('FedAvgServer', 'DecoderMatchedClient')
    """
    factory = task.model_factory()
    split_model(factory(), params.split)  # refuses a model it cannot split, once, here
    server = FedAvgServer(factory, task.test, task.pretraining(), task.probes)
    return server, lambda client: DecoderMatchedClient(factory, task.clients[client], task.train, params)
