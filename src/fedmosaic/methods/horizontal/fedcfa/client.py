"""The FedCFA client: FedAvg's local training with counterfactual samples, plus chunk means."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch
from typing_extensions import override

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.federation import ClientContext, ClientState, Message, derive_rng, derive_seed
from fedmosaic.methods.arrays import to_tensor
from fedmosaic.methods.horizontal.fedavg.client import FedAvgClient, ModelFactory
from fedmosaic.methods.horizontal.fedcfa.average_dataset import AVERAGE_X, AVERAGE_Y, chunk_means, without_means
from fedmosaic.methods.horizontal.fedcfa.carried_sgd import carried_sgd, momentum_arrays
from fedmosaic.methods.horizontal.fedcfa.objective import CounterfactualObjective, frozen_copy
from fedmosaic.methods.horizontal.fedcfa.params import FedCFAParams
from fedmosaic.methods.horizontal.fedcfa.split import split_model
from fedmosaic.methods.train_params import TrainParams
from fedmosaic.methods.training import LossFn, cross_entropy_loss


class FedCFAClient(FedAvgClient):
    """Trains the received model with counterfactual samples, then uploads it and its chunk means.

    The message holds the global model and, from round 2 on, the global
    average dataset (``avg_x``, ``avg_y``). Without it the client trains with
    plain cross-entropy, exactly like FedAvg. The reply holds the trained
    model, ``num_examples``, ``train_loss`` and the means of the client's
    shuffled data chunks (``chunk_x``, ``chunk_y``); no sample leaves the
    client.

    Parameters
    ----------
    model_factory : callable () -> torch.nn.Module
        Builds a model of the global architecture (an ``nn.Sequential``).
    data : ArrayDataset
        The client's private training data.
    train : TrainParams
        Local training hyper-parameters.
    params : FedCFAParams
        Method parameters.
    split : int
        Where the model is cut into encoder and decoder (resolved by the
        builder from ``params.split``).
    """

    def __init__(
        self,
        model_factory: ModelFactory,
        data: ArrayDataset,
        train: TrainParams,
        params: FedCFAParams,
        split: int,
    ) -> None:
        super().__init__(model_factory, data, train)
        self._data = data
        self._params = params
        self._split = split
        self._average: tuple[torch.Tensor, torch.Tensor] | None = None
        self._draw_seed = 0
        self._carried: torch.optim.Optimizer | None = None

    @override
    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        # Per-message caches read by _loss_fn, which FedAvg's handle calls once the model is loaded.
        self._average = _received_average(message)
        self._draw_seed = derive_seed(context.seed, "counterfactual")
        reply = super().handle(replace(message, arrays=without_means(message.arrays)), state, context)
        reply.arrays.update(
            chunk_means(
                self._data.x,
                self._data.y,
                self._data.num_classes,
                derive_rng(context.seed, "chunks"),
                chunk_size=self._params.chunk_size,
                num_chunks=self._params.num_chunks,
                keep_remainder=self._params.chunk_remainder == "kept",
            )
        )
        if self._carried is not None:
            state.arrays.update(momentum_arrays(self._carried, self._model))
        return reply

    @override
    def _optimizer(self, state: ClientState) -> torch.optim.Optimizer | None:
        """The carried SGD with the momentum kept in ``state`` (``client_optimizer = "carried-sgd"``), else None."""
        if self._params.client_optimizer == "per-round":
            return None
        self._carried = carried_sgd(self._model, self._train.lr, state.arrays)
        return self._carried

    def _loss_fn(self) -> LossFn:
        """The round's loss; called by FedAvg's ``handle`` once the global model is loaded."""
        if self._average is None:
            return cross_entropy_loss
        average_x, average_y = self._average
        _, decoder = split_model(self._model, self._split)
        return CounterfactualObjective(
            split=self._split,
            reference_decoder=frozen_copy(decoder),
            average_x=average_x,
            average_y=average_y,
            params=self._params,
            generator=torch.Generator().manual_seed(self._draw_seed),
        )


def _received_average(message: Message) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The global average dataset in ``message`` as tensors, or None when there is none."""
    if AVERAGE_X not in message.arrays or len(message.arrays[AVERAGE_X]) == 0:
        return None
    return (
        to_tensor(np.array(message.arrays[AVERAGE_X], dtype=np.float32)),
        to_tensor(np.array(message.arrays[AVERAGE_Y], dtype=np.float32)),
    )
