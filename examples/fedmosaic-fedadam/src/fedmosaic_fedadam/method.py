"""FedAdam as a fedmosaic method: its builder and the :class:`~fedmosaic.methods.base.Method` the entry point names."""

from __future__ import annotations

from fedmosaic.plugin import Built, Capabilities, FedAvgClient, HorizontalTask, Method

from .params import FedAdamParams
from .server import FedAdamServer


def build_fedadam(task: HorizontalTask, params: FedAdamParams) -> Built:
    """FedAdam's server and client factory for a classification task: FedAvg's clients, FedAdam's server.

    Examples
    --------
    >>> import numpy as np
    >>> from fedmosaic.data.arrays import ArrayDataset
    >>> from fedmosaic.methods.horizontal.models import ModelParams
    >>> from fedmosaic.methods.training import TrainParams
    >>> data = ArrayDataset(np.zeros((4, 3), np.float32), np.array([0, 1, 0, 1]), num_classes=2)
    >>> task = HorizontalTask([data, data], data, ModelParams(hidden=[4]), TrainParams())
    >>> server, clients = build_fedadam(task, FedAdamParams())
    >>> type(server).__name__, type(clients(0)).__name__
    ('FedAdamServer', 'FedAvgClient')
    """
    factory = task.model_factory()
    server = FedAdamServer(factory, task.test, params, task.pretraining(), task.probes)
    return server, lambda client: FedAvgClient(factory, task.clients[client], task.train)


FEDADAM = Method(
    "fedadam",
    "FedAdam: the mean client update as a pseudo-gradient for a server Adam step (server_lr, beta1, beta2, tau)",
    "classification",
    FedAdamParams,
    build_fedadam,
    # Each flag holds because the clients are FedAvg's, unchanged, and the server reads their uploads
    # only through ctx.exchange_aggregated: the Adam step is computed from the combined mean alone.
    # fedmosaic's method contract (tests/methods/test_contract.py) checks every flag on a live run.
    Capabilities(
        dp_sgd=True,  # the one training loop, on a cross-entropy of per-example terms
        client_dp=True,  # the step post-processes the noised mean: the accountant's epsilon covers it
        robust_aggregation=True,  # the mean the step is taken on is the rule's (median, trimmed mean, clip_norm)
        update_attacks=True,  # replies carry the model under the names it was sent
        secure_aggregation=True,  # the step needs the sum only; nothing else uploaded reveals an update
    ),
)
"""The method ``fedadam``, registered by this package's ``fedmosaic.methods`` entry point."""
