"""SCAFFOLD's client: local steps corrected by ``c - c_i``, its control variate ``c_i`` kept in its state."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from torch import Tensor
from typing_extensions import override

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.federation import ClientContext, ClientState, Message
from fedmosaic.methods.arrays import to_tensor, unprefixed
from fedmosaic.methods.horizontal.fedavg.client import FedAvgClient, ModelFactory
from fedmosaic.methods.horizontal.gradients import GradientMap, gradient_hooks
from fedmosaic.methods.horizontal.scaffold.messages import CONTROL, CONTROL_DELTA, LOCAL_CONTROL
from fedmosaic.methods.train_params import TrainParams


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
        control = unprefixed(CONTROL, message.arrays)
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
