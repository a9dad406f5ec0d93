"""FedAvg's and FedProx's client: trains the received model on local data and returns it."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn
from torch.nn import functional as F
from typing_extensions import override

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.devices import to_device
from fedmosaic.federation import ClientContext, ClientLogic, ClientState, Message
from fedmosaic.federation.message import as_int
from fedmosaic.methods.arrays import load_arrays, model_to_arrays, to_tensor
from fedmosaic.methods.train_params import TrainParams
from fedmosaic.methods.training import DP_SGD_EPSILON, LossFn, cross_entropy_loss, dp_sgd_epsilon, train_epochs

ModelFactory = Callable[[], nn.Module]


class FedAvgClient(ClientLogic):
    """Trains the received model on local data and returns it.

    Parameters
    ----------
    model_factory : callable () -> torch.nn.Module
        Builds a model of the global architecture (its values are overwritten).
    data : ArrayDataset
        The client's private training data; it never leaves the client.
    train : TrainParams
        Local training hyper-parameters.
    mu : float, default 0.0
        FedProx proximal weight; 0 gives FedAvg.
    """

    def __init__(self, model_factory: ModelFactory, data: ArrayDataset, train: TrainParams, mu: float = 0.0) -> None:
        if mu < 0:
            raise ValueError(f"mu must be >= 0, got {mu}")
        self._model = to_device(model_factory())
        self._x = to_tensor(data.x)
        self._y = to_tensor(data.y)
        self._train = train
        self._mu = mu

    @override
    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        load_arrays(self._model, message.arrays)
        generator = torch.Generator().manual_seed(context.seed)
        loss = train_epochs(
            self._model,
            self._x,
            self._y,
            params=self._train,
            generator=generator,
            loss_fn=self._loss_fn(),
            optimizer=self._optimizer(state),
        )
        metrics = {"num_examples": float(len(self._y)), "train_loss": loss}
        if self._train.dp_noise_multiplier > 0:
            rounds = as_int(state.config.get("dp_rounds", 0)) + 1
            state.config["dp_rounds"] = rounds
            metrics[DP_SGD_EPSILON] = dp_sgd_epsilon(self._train, len(self._y), rounds)
        return Message(arrays=model_to_arrays(self._model), metrics=metrics)

    def _optimizer(self, state: ClientState) -> torch.optim.Optimizer | None:
        """The round's optimizer; None: the one the training parameters describe, built afresh."""
        return None

    def _loss_fn(self) -> LossFn:
        if self._mu == 0.0:
            return cross_entropy_loss
        anchors = [p.detach().clone() for p in self._model.parameters()]
        mu = self._mu

        def proximal_loss(model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
            drift = sum(((p - a) ** 2).sum() for p, a in zip(model.parameters(), anchors, strict=True))
            return F.cross_entropy(model(x), y) + 0.5 * mu * drift

        return proximal_loss
