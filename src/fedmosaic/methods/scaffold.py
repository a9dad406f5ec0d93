"""SCAFFOLD (Karimireddy et al., ICML 2020): local steps corrected by control variates.

The server keeps the global model ``x`` and a server control variate ``c``;
each client ``i`` keeps its own control variate ``c_i`` (zero at first) in
its client state. In a round the server sends ``x`` and ``c``; a selected
client runs ``K`` local steps from ``x`` on the corrected gradient
``g_i(y) - c_i + c``, then sets (the paper's option II)

    ``c_i+ = c_i - c + (x - y) / (K lr)``

and replies with its model ``y`` and the change ``c_i+ - c_i``. With SGD
momentum ``m`` the ``K`` steps move the model further than ``K lr`` times
the mean gradient: a constant gradient ``g`` moves it by ``lr g S`` with
``S = sum_{t=1..K} (1 - m^t) / (1 - m)`` (:func:`effective_steps`), so ``K``
is replaced by ``S``, which keeps ``c_i+`` an estimate of the client's mean
gradient (with ``K`` alone and momentum 0.9 it is about ten times too large,
and the corrections make training diverge). Without momentum ``S = K``. The
server
moves the model by ``server_lr`` toward the example-weighted average of the
replies (``server_lr = 1``: the average itself, as FedAvg) and updates

    ``c <- c + (1 / N) sum_i (c_i+ - c_i)``

over the ``N`` clients of the federation (the paper's ``|S| / N`` times the
mean over the ``|S|`` replies). Both come from the round's
:meth:`~fedmosaic.federation.round.RoundContext.exchange_aggregated`, the
model as the weighted mean and the changes as the unweighted sum, so that
with secure aggregation the server sees neither a client's model nor its
change of control variate. The correction is added to each parameter's
gradient before the optimizer's step, so momentum and weight decay act on the
corrected gradient, as in common implementations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
from pydantic import Field
from torch import Tensor
from typing_extensions import override

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.federation import ArraySpec, ClientContext, ClientState, Message, ReplySpec, RoundContext
from fedmosaic.limits import MAX_LR
from fedmosaic.methods.arrays import to_tensor
from fedmosaic.methods.base import Built, MethodParams
from fedmosaic.methods.fedavg import FedAvgClient, FedAvgServer, ModelFactory, training_metrics
from fedmosaic.methods.gradients import GradientMap, gradient_hooks
from fedmosaic.methods.probes import Probe
from fedmosaic.methods.task import Pretraining
from fedmosaic.methods.training import TrainParams

if TYPE_CHECKING:  # the registry imports this module
    from fedmosaic.methods.task import HorizontalTask

CONTROL = "control/"
"""Prefix of the server control variate ``c`` in messages and in the server state."""
CONTROL_DELTA = "control_delta/"
"""Prefix of a client's change of its control variate ``c_i+ - c_i`` in replies."""
LOCAL_CONTROL = "local_control/"
"""Prefix of the client control variate ``c_i`` in the client state."""


class ScaffoldParams(MethodParams):
    """SCAFFOLD parameters.

    Parameters
    ----------
    server_lr : float, default 1.0
        Global step size: the model moves this share of the way to the
        average of the replies (> 0).
    """

    server_lr: float = Field(default=1.0, gt=0, le=MAX_LR)


def _prefixed(prefix: str, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {prefix + name: array for name, array in arrays.items()}


def _unprefixed(prefix: str, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name[len(prefix) :]: array for name, array in arrays.items() if name.startswith(prefix)}


class ScaffoldServer(FedAvgServer):
    """FedAvg's server with a server control variate over the model's parameters.

    Parameters
    ----------
    model_factory : callable () -> torch.nn.Module
        Builds the (untrained) global model.
    test : ArrayDataset
        The global test set.
    num_clients : int
        ``N``, the clients of the federation.
    params : ScaffoldParams
        Method parameters.
    pretraining : Pretraining or None, default None
        Train the initial model centrally first.
    probes : sequence of Probe, default ()
        Further measurements added to every evaluation.
    """

    def __init__(
        self,
        model_factory: ModelFactory,
        test: ArrayDataset,
        num_clients: int,
        params: ScaffoldParams,
        pretraining: Pretraining | None = None,
        probes: Sequence[Probe] = (),
    ) -> None:
        super().__init__(model_factory, test, pretraining, probes)
        self._num_clients = num_clients
        self._params = params
        self.control: dict[str, np.ndarray] = {}

    @override
    def initialize(self, seed: int) -> None:
        super().initialize(seed)
        names = {name for name, _ in self._require_model().named_parameters()}
        self.control = {name: np.zeros_like(a) for name, a in self.params.items() if name in names}

    @override
    def run_round(self, ctx: RoundContext) -> dict[str, float]:
        message = Message(arrays={**self.params, **_prefixed(CONTROL, self.control)}, config={"round": ctx.round})
        combined, replies = ctx.exchange_aggregated(
            dict.fromkeys(ctx.clients, message),
            expect=self.reply_spec(),
            reference=self.params,
            summed=_prefixed(CONTROL_DELTA, self.control),
        )
        average = {n: combined[n] for n in self.params}
        step = self._params.server_lr
        if step != 1.0:
            average = {n: (x + step * (average[n] - x)).astype(x.dtype) for n, x in self.params.items()}
        self.params = average
        for name, c in self.control.items():
            change = combined[CONTROL_DELTA + name]
            self.control[name] = (c + change / self._num_clients).astype(c.dtype)
        return training_metrics([replies[client] for client in sorted(replies)])

    def reply_spec(self) -> ReplySpec:
        """The model as sent and the change of the client's control variate."""
        spec = super().reply_spec()
        deltas = {CONTROL_DELTA + n: ArraySpec(c.shape, str(c.dtype)) for n, c in self.control.items()}
        return replace(spec, arrays={**spec.arrays, **deltas})

    @override
    def state_dict(self) -> ClientState:
        state = super().state_dict()
        state.arrays.update(_prefixed(CONTROL, self.control))
        return state

    @override
    def load_state_dict(self, state: ClientState) -> None:
        model = {n: a for n, a in state.arrays.items() if not n.startswith(CONTROL)}
        super().load_state_dict(ClientState(arrays=model, config=state.config))
        self.control = _unprefixed(CONTROL, state.arrays)


class ScaffoldClient(FedAvgClient):
    """Trains on the corrected gradient ``g - c_i + c``; keeps ``c_i`` in its client state.

    Parameters
    ----------
    model_factory : callable () -> torch.nn.Module
        Builds a model of the global architecture.
    data : ArrayDataset
        The client's private training data.
    train : TrainParams
        Local training hyper-parameters (``lr`` is the ``lr`` of option II).
    """

    def __init__(self, model_factory: ModelFactory, data: ArrayDataset, train: TrainParams) -> None:
        super().__init__(model_factory, data, train)
        steps = train.epochs * math.ceil(len(data) / train.batch_size)
        self._steps = effective_steps(steps, train.momentum if train.optimizer == "sgd" else 0.0)

    @override
    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        control = _unprefixed(CONTROL, message.arrays)
        start = {n: a for n, a in message.arrays.items() if not n.startswith(CONTROL)}
        local = {n: state.arrays.get(LOCAL_CONTROL + n, np.zeros_like(c)) for n, c in control.items()}
        parameters = dict(self._model.named_parameters())
        shifts = [(parameters[n], _shifted_by(to_tensor(control[n] - local[n]))) for n in control]
        with gradient_hooks(shifts):
            reply = super().handle(replace(message, arrays=start), state, context)
        scale = 1.0 / (self._steps * self._train.lr)
        for name, c in control.items():
            updated = (local[name] - c + (start[name] - reply.arrays[name]) * scale).astype(c.dtype)
            reply.arrays[CONTROL_DELTA + name] = updated - local[name]
            state.arrays[LOCAL_CONTROL + name] = updated
        return reply


def effective_steps(steps: int, momentum: float) -> float:
    """How many plain SGD steps ``steps`` steps of SGD with ``momentum`` amount to under a constant gradient.

    ``sum_{t=1..K} (1 - m^t) / (1 - m)``: the model moves by ``lr g`` times
    this after ``K`` steps from zero momentum.

    Examples
    --------
    >>> effective_steps(10, 0.0)
    10.0
    >>> round(effective_steps(2, 0.5), 3)  # 1 + 1.5
    2.5
    """
    if momentum == 0.0:
        return float(steps)
    return float(sum((1.0 - momentum**t) / (1.0 - momentum) for t in range(1, steps + 1)))


def _shifted_by(shift: Tensor) -> GradientMap:
    """A gradient hook adding ``shift`` (``c - c_i``) to the gradient."""
    return lambda gradient: gradient + shift


def build_scaffold(task: HorizontalTask, params: ScaffoldParams) -> Built:
    """SCAFFOLD's server and client factory for a classification task.

    Examples
    --------
    >>> import numpy as np
    >>> from fedmosaic.methods.models import ModelParams
    >>> from fedmosaic.methods.task import HorizontalTask
    >>> data = ArrayDataset(np.zeros((4, 3), np.float32), np.array([0, 1, 0, 1]), num_classes=2)
    >>> task = HorizontalTask([data, data], data, ModelParams(hidden=[4]), TrainParams())
    >>> server, clients = build_scaffold(task, ScaffoldParams())
    >>> type(server).__name__, type(clients(0)).__name__
    ('ScaffoldServer', 'ScaffoldClient')
    """
    factory = task.model_factory()
    server = ScaffoldServer(factory, task.test, len(task.clients), params, task.pretraining(), task.probes)
    return server, lambda client: ScaffoldClient(factory, task.clients[client], task.train)
