"""FedMix's and NaiveMix's client: shares its means once, keeps the global means it receives, trains on mixes."""

from __future__ import annotations

import numpy as np
import torch
from typing_extensions import override

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.federation import ClientContext, ClientState, Message, derive_rng, derive_seed
from fedmosaic.methods.arrays import to_tensor
from fedmosaic.methods.horizontal.fedavg.client import FedAvgClient, ModelFactory
from fedmosaic.methods.horizontal.fedmix.losses import MixingLoss
from fedmosaic.methods.horizontal.fedmix.params import FedMixParams
from fedmosaic.methods.train_params import TrainParams
from fedmosaic.methods.training import LossFn

_SHARED = ("global_x", "global_y")


def local_means(data: ArrayDataset, mean_batch: int | None, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Means of a client's inputs and one-hot labels, over groups of samples.

    Parameters
    ----------
    data : ArrayDataset
        The client's data (not empty).
    mean_batch : int or None
        Smallest group size. The shuffled samples are cut into
        ``len(data) // mean_batch`` groups of as equal sizes as possible, so
        every sample counts and every mean covers at least ``mean_batch``
        samples. None, or more than the client has: one mean of all samples.
    rng : numpy.random.Generator
        Shuffles the samples before grouping.

    Returns
    -------
    mean_x : numpy.ndarray
        float32, shape ``(m, *input_shape)``.
    mean_y : numpy.ndarray
        float32, shape ``(m, num_classes)``; each row sums to 1.

    Examples
    --------
    >>> data = ArrayDataset(np.array([[0.0], [2.0]], np.float32), np.array([0, 1]), num_classes=2)
    >>> mean_x, mean_y = local_means(data, None, np.random.default_rng(0))
    >>> mean_x.tolist(), mean_y.tolist()
    ([[1.0]], [[0.5, 0.5]])
    """
    groups = 1 if mean_batch is None else max(1, len(data) // mean_batch)
    order = np.arange(len(data)) if groups == 1 else rng.permutation(len(data))
    one_hot = np.eye(data.num_classes, dtype=np.float32)[data.y]
    parts = np.array_split(order, groups)
    mean_x = np.stack([data.x[part].mean(axis=0) for part in parts]).astype(np.float32)
    mean_y = np.stack([one_hot[part].mean(axis=0) for part in parts]).astype(np.float32)
    return mean_x, mean_y


class FedMixClient(FedAvgClient):
    """FedAvg's client, training with the global means it holds and sharing its own.

    The received means are kept in ``state.arrays`` as ``global_x``,
    ``global_y`` and ``global_from`` (the contributing client of each row).

    Parameters
    ----------
    model_factory : callable () -> torch.nn.Module
        Builds a model of the global architecture.
    data : ArrayDataset
        The client's private data; only its means ever leave the client.
    train : TrainParams
        Local training hyper-parameters.
    params : FedMixParams
        Variant, mixing weight and samples per mean.

    Examples
    --------
    See ``tests/methods/horizontal/test_fedmix.py`` for clients in a federation.
    """

    def __init__(
        self, model_factory: ModelFactory, data: ArrayDataset, train: TrainParams, params: FedMixParams
    ) -> None:
        super().__init__(model_factory, data, train)
        self._data = data
        self._params = params
        self._mixing: MixingLoss | None = None

    @override
    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        _store_means(message, state)
        self._mixing = self._mixing_loss(state, context)
        model_only = Message(
            arrays={k: v for k, v in message.arrays.items() if k not in _SHARED},
            config=message.config,
            kind=message.kind,
        )
        reply = super().handle(model_only, state, context)
        if message.config.get("send_means"):
            rng = derive_rng(context.seed, "means")
            reply.arrays["mean_x"], reply.arrays["mean_y"] = local_means(self._data, self._params.mean_batch, rng)
        return reply

    def _loss_fn(self) -> LossFn:
        return super()._loss_fn() if self._mixing is None else self._mixing

    def _mixing_loss(self, state: ClientState, context: ClientContext) -> MixingLoss | None:
        if "global_x" not in state.arrays:
            return None
        return MixingLoss(
            means_x=to_tensor(state.arrays["global_x"]),
            means_y=to_tensor(state.arrays["global_y"]),
            lam=self._params.lam,
            variant=self._params.variant,
            generator=torch.Generator().manual_seed(derive_seed(context.seed, "mix")),
        )


def _store_means(message: Message, state: ClientState) -> None:
    """Append the received rows from contributors the client does not hold yet."""
    if "global_x" not in message.arrays:
        return
    sources = np.asarray(message.config["means_from"], dtype=np.int64)
    new = ~np.isin(sources, state.arrays.get("global_from", np.empty(0, np.int64)))
    received = {"global_x": message.arrays["global_x"], "global_y": message.arrays["global_y"], "global_from": sources}
    for name, rows in received.items():
        held = [state.arrays[name]] if name in state.arrays else []
        state.arrays[name] = np.concatenate([*held, rows[new]])
