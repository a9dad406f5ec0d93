"""FedMix's and NaiveMix's builder: the server and the client factory of a classification task."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fedmosaic.methods.base import Built
from fedmosaic.methods.horizontal.fedmix.client import FedMixClient
from fedmosaic.methods.horizontal.fedmix.params import FedMixParams
from fedmosaic.methods.horizontal.fedmix.server import FedMixServer

if TYPE_CHECKING:
    from fedmosaic.methods.horizontal.task import HorizontalTask


def build_fedmix(task: HorizontalTask, params: FedMixParams) -> Built:
    """FedMix's (or NaiveMix's) server and client factory for a classification task.

    Parameters
    ----------
    task : HorizontalTask
        Clients' data, test set, model and training hyper-parameters.
    params : FedMixParams
        The method's parameters (:class:`NaiveMixParams` for NaiveMix's defaults).

    Returns
    -------
    tuple of (FedMixServer, callable int -> FedMixClient)

    Examples
    --------
    See ``tests/methods/horizontal/test_fedmix.py``.
    """
    factory = task.model_factory()
    server = FedMixServer(factory, task.test, task.pretraining(), params.mean_batch, task.probes)
    return server, lambda client: FedMixClient(factory, task.clients[client], task.train, params)
