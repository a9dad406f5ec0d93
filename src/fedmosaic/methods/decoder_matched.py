"""FedAvg with FedCFA's decoder step: a control that separates counterfactuals from step size.

FedCFA's client loss is ``w_ce CE + w_fdc FDC + w_pos CE(positive) +
w_neg softCE(negative)``, and its counterfactual terms train the decoder only
(the layers after FedCFA's split). With the reference weights 1 : 5 : 5 the
decoder's gradient is the sum of three cross-entropy gradients of similar
size, so its step is about ``1 + 5 + 5 = 11`` times FedAvg's, while the
encoder's is FedAvg's. This method is FedAvg whose decoder's gradient is
multiplied by ``decoder_scale`` before the optimizer's step: the same as
raising the decoder's learning rate by that factor, except that weight decay
is not scaled (exactly as in FedCFA, whose weights scale the loss, not the
decay). If FedCFA's lead over FedAvg is only its larger decoder step, this
control takes the lead too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field, PositiveInt
from typing_extensions import override

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.federation import ClientContext, ClientState, Message
from fedmosaic.methods.base import Built, MethodParams
from fedmosaic.methods.fedavg import FedAvgClient, FedAvgServer, ModelFactory
from fedmosaic.methods.fedcfa.split import split_model
from fedmosaic.methods.gradients import gradient_hooks
from fedmosaic.methods.training import TrainParams

if TYPE_CHECKING:  # the registry imports this module
    from fedmosaic.methods.task import HorizontalTask


class DecoderMatchedParams(MethodParams):
    """Parameters of FedAvg with a matched decoder step.

    Parameters
    ----------
    decoder_scale : float, default 11.0
        Factor on the decoder's gradient (its effective learning rate):
        FedCFA's ``ce_weight + positive_weight + negative_weight`` with the
        reference weights 1 + 5 + 5 (> 0).
    split : int or None, default None
        Where the decoder starts, as FedCFA's ``split`` (unset: FedCFA's
        default cut).
    """

    decoder_scale: float = Field(default=11.0, gt=0)
    split: PositiveInt | None = None


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
    >>> from fedmosaic.methods.models import ModelParams
    >>> from fedmosaic.methods.task import HorizontalTask
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
