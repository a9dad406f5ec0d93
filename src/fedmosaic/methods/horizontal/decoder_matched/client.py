"""FedAvg's client with the decoder's gradient scaled before each step."""

from __future__ import annotations

from typing_extensions import override

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.federation import ClientContext, ClientState, Message
from fedmosaic.methods.horizontal.decoder_matched.params import DecoderMatchedParams
from fedmosaic.methods.horizontal.fedavg.client import FedAvgClient, ModelFactory
from fedmosaic.methods.horizontal.fedcfa.split import split_model
from fedmosaic.methods.horizontal.gradients import gradient_hooks
from fedmosaic.methods.train_params import TrainParams


class DecoderMatchedClient(FedAvgClient):
    """FedAvg's client whose decoder's gradient is scaled by ``decoder_scale``.

    Parameters
    ----------
    model_factory : callable () -> torch.nn.Module
        Builds a model of the global architecture (an ``nn.Sequential``).
    data : ArrayDataset
        The client's private training data.
    train : TrainParams
        Local training hyper-parameters.
    params : DecoderMatchedParams
        The scale and the split.
    """

    def __init__(
        self, model_factory: ModelFactory, data: ArrayDataset, train: TrainParams, params: DecoderMatchedParams
    ) -> None:
        super().__init__(model_factory, data, train)
        _, self._decoder = split_model(self._model, params.split)
        self._scale = params.decoder_scale

    @override
    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        scale = self._scale
        with gradient_hooks((p, lambda g: scale * g) for p in self._decoder.parameters()):
            return super().handle(message, state, context)
