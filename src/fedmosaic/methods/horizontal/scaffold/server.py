"""SCAFFOLD's server: the global model and the server control variate ``c``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from typing_extensions import override

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.federation import ArraySpec, ClientState, Message, ReplySpec, RoundContext
from fedmosaic.methods.arrays import prefixed, unprefixed
from fedmosaic.methods.horizontal.fedavg.client import ModelFactory
from fedmosaic.methods.horizontal.fedavg.server import FedAvgServer, training_metrics
from fedmosaic.methods.horizontal.probes import Probe
from fedmosaic.methods.horizontal.scaffold.messages import CONTROL, CONTROL_DELTA
from fedmosaic.methods.horizontal.scaffold.params import ScaffoldParams
from fedmosaic.methods.horizontal.task import Pretraining


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
        message = Message(arrays={**self.params, **prefixed(CONTROL, self.control)}, config={"round": ctx.round})
        combined, replies = ctx.exchange_aggregated(
            dict.fromkeys(ctx.clients, message),
            expect=self.reply_spec(),
            reference=self.params,
            summed=prefixed(CONTROL_DELTA, self.control),
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
        state.arrays.update(prefixed(CONTROL, self.control))
        return state

    @override
    def load_state_dict(self, state: ClientState) -> None:
        model = {n: a for n, a in state.arrays.items() if not n.startswith(CONTROL)}
        super().load_state_dict(ClientState(arrays=model, config=state.config))
        self.control = unprefixed(CONTROL, state.arrays)
