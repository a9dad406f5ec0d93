"""FedAdam's server: FedAvg's, with an Adam step on the mean client update instead of taking the mean.

Reddi et al., "Adaptive Federated Optimization" (ICLR 2021), Algorithm 2
(FedAdam). Each round, with ``x`` the global model and ``Delta`` the
example-weighted mean of the clients' ``x_i - x``:

.. code-block:: text

    m = beta1 * m + (1 - beta1) * Delta
    v = beta2 * v + (1 - beta2) * Delta ** 2
    x = x + server_lr * m / (sqrt(v) + tau)

coordinate by coordinate, ``m`` and ``v`` starting at zero, without bias
correction (as the paper). Buffers (e.g. batch-norm statistics) are not
trained and take the mean as FedAvg does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from fedmosaic.plugin import (
    ArrayDataset,
    FedAvgServer,
    Message,
    ModelFactory,
    Pretraining,
    Probe,
    RoundContext,
    ServerState,
    prefixed,
    training_metrics,
    unprefixed,
)
from typing_extensions import override

from .params import FedAdamParams

FIRST_MOMENT = "adam_m/"
"""Prefix of the first moment ``m`` of each parameter in the server state."""
SECOND_MOMENT = "adam_v/"
"""Prefix of the second moment ``v`` of each parameter in the server state."""


class FedAdamServer(FedAvgServer):
    """FedAvg's server whose global model takes an Adam step on the mean client update.

    The round's upload goes through
    :meth:`~fedmosaic.federation.round.RoundContext.exchange_aggregated`, as
    FedAvg's: the mean it returns is the federation's rule (weighted mean,
    median, trimmed mean, noised or securely summed). Only what is done with
    that mean differs. The moments are part of :meth:`state_dict`, so an
    interrupted run resumes where it stopped.

    Parameters
    ----------
    model_factory : callable () -> torch.nn.Module
        Builds the (untrained) global model.
    test : ArrayDataset
        The global test set.
    params : FedAdamParams
        The server optimiser's parameters.
    pretraining : Pretraining or None, default None
        Train the initial model centrally first.
    probes : sequence of Probe, default ()
        Further measurements added to every evaluation.

    Attributes
    ----------
    first_moment, second_moment : dict of str to numpy.ndarray
        ``m`` and ``v`` of each trained parameter, by the parameter's name.
    """

    def __init__(
        self,
        model_factory: ModelFactory,
        test: ArrayDataset,
        params: FedAdamParams,
        pretraining: Pretraining | None = None,
        probes: Sequence[Probe] = (),
    ) -> None:
        super().__init__(model_factory, test, pretraining, probes)
        self._adam = params
        self.first_moment: dict[str, np.ndarray] = {}
        self.second_moment: dict[str, np.ndarray] = {}

    @override
    def initialize(self, seed: int) -> None:
        super().initialize(seed)
        trained = {name for name, _ in self._require_model().named_parameters()}
        self.first_moment = {name: np.zeros_like(a) for name, a in self.params.items() if name in trained}
        self.second_moment = {name: np.zeros_like(a) for name, a in self.first_moment.items()}

    @override
    def run_round(self, ctx: RoundContext) -> dict[str, float]:
        message = Message(arrays=self.params, config={"round": ctx.round})
        mean, replies = ctx.exchange_aggregated(
            dict.fromkeys(ctx.clients, message), expect=self.reply_spec(), reference=self.params
        )
        self.params = self._adam_step(mean)
        return training_metrics([replies[client] for client in sorted(replies)])

    def _adam_step(self, mean: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The global model after one Adam step on ``mean - params``; updates the moments."""
        p = self._adam
        stepped: dict[str, np.ndarray] = {}
        for name, x in self.params.items():
            average = mean.get(name, x)  # a name no reply held: no update
            if name not in self.first_moment:  # a buffer: FedAvg's mean
                stepped[name] = average
                continue
            delta = average.astype(np.float64) - x
            m = p.beta1 * self.first_moment[name] + (1 - p.beta1) * delta
            v = p.beta2 * self.second_moment[name] + (1 - p.beta2) * delta**2
            self.first_moment[name] = m.astype(x.dtype)
            self.second_moment[name] = v.astype(x.dtype)
            stepped[name] = (x + p.server_lr * m / (np.sqrt(v) + p.tau)).astype(x.dtype)
        return stepped

    @override
    def state_dict(self) -> ServerState:
        state = super().state_dict()
        state.arrays.update(prefixed(FIRST_MOMENT, self.first_moment))
        state.arrays.update(prefixed(SECOND_MOMENT, self.second_moment))
        return state

    @override
    def load_state_dict(self, state: ServerState) -> None:
        moments = (FIRST_MOMENT, SECOND_MOMENT)
        model = {name: a for name, a in state.arrays.items() if not name.startswith(moments)}
        super().load_state_dict(ServerState(arrays=model, config=state.config))
        self.first_moment = unprefixed(FIRST_MOMENT, state.arrays)
        self.second_moment = unprefixed(SECOND_MOMENT, state.arrays)
