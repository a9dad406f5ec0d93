"""The FedCFA server: FedAvg of the models, plus the global average dataset."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
from typing_extensions import override

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.federation import (
    ClientState,
    Message,
    ReplySpec,
    RoundContext,
    derive_rng,
    label_means_check,
)
from fedmosaic.methods.horizontal.fedavg.client import ModelFactory
from fedmosaic.methods.horizontal.fedavg.server import FedAvgServer, training_metrics
from fedmosaic.methods.horizontal.fedcfa.average_dataset import (
    AVERAGE_X,
    AVERAGE_Y,
    CHUNK_X,
    CHUNK_Y,
    cache_from_arrays,
    cache_to_arrays,
    global_average_dataset,
    without_means,
)
from fedmosaic.methods.horizontal.fedcfa.params import FedCFAParams
from fedmosaic.methods.horizontal.probes import Probe
from fedmosaic.methods.horizontal.task import Pretraining


class FedCFAServer(FedAvgServer):
    """Example-weighted averaging of the models; broadcasts the global average dataset.

    Each round the server sends the global model and the global average
    dataset (none in round 1), replaces the model by the example-weighted
    average of every parameter and buffer of the replies, keeps each replying
    client's chunk means in a cache (replacing that client's older ones), and
    builds the next global average dataset
    (:func:`~fedmosaic.methods.horizontal.fedcfa.average_dataset.global_average_dataset`):
    by default from the cache, so a client not sampled last round still
    contributes its latest means. The dataset and the cache are part of
    :meth:`state_dict`, so a resumed run continues exactly.

    Parameters
    ----------
    model_factory : callable () -> torch.nn.Module
        Builds the (untrained) global model.
    test : ArrayDataset
        The global test set the server evaluates on.
    params : FedCFAParams
        Method parameters (``average_dataset``, ``num_chunks``).
    pretraining : Pretraining or None, default None
        Train the initial model centrally first.
    probes : sequence of Probe, default ()
        Further measurements added to every evaluation.
    """

    def __init__(
        self,
        model_factory: ModelFactory,
        test: ArrayDataset,
        params: FedCFAParams,
        pretraining: Pretraining | None = None,
        probes: Sequence[Probe] = (),
    ) -> None:
        super().__init__(model_factory, test, pretraining, probes)
        self._params = params
        self.average: dict[str, np.ndarray] = {}
        self.cache: dict[int, dict[str, np.ndarray]] = {}

    @override
    def initialize(self, seed: int) -> None:
        super().initialize(seed)
        self.average = {}
        self.cache = {}

    @override
    def run_round(self, ctx: RoundContext) -> dict[str, float]:
        message = Message(arrays={**self.params, **self.average}, config={"round": ctx.round})
        self.params, replies = ctx.exchange_aggregated(
            dict.fromkeys(ctx.clients, message), expect=self.reply_spec(), reference=self.params
        )
        ordered = [replies[client] for client in sorted(replies)]
        for client in sorted(replies):
            self.cache[client] = {name: replies[client].arrays[name] for name in (CHUNK_X, CHUNK_Y)}
        self.average = self._average_dataset(
            [r.arrays for r in ordered], derive_rng(ctx.seed, ctx.round, "average_dataset")
        )
        return training_metrics(ordered)

    def _average_dataset(
        self, uploads: list[Mapping[str, np.ndarray]], rng: np.random.Generator
    ) -> dict[str, np.ndarray]:
        """The next global average dataset: from the cache of every client's latest means, or from this round's."""
        mode = self._params.average_dataset
        if mode == "previous":
            return global_average_dataset(uploads, rng)
        if mode == "fixed":
            return global_average_dataset(uploads, rng, size=self._params.num_chunks)
        cached = [self.cache[client] for client in sorted(self.cache)]
        size = self._params.num_chunks or max((len(means[CHUNK_X]) for means in cached), default=1)
        return global_average_dataset(cached, rng, size=size)

    def reply_spec(self) -> ReplySpec:
        """The model as sent, plus chunk means: no more chunks than the client's examples allow."""
        spec = super().reply_spec()
        return replace(
            spec,
            arrays={**spec.arrays, **self.mean_specs(CHUNK_X, CHUNK_Y)},
            checks=(label_means_check(CHUNK_X, CHUNK_Y, self._max_chunks),),
        )

    def _max_chunks(self, examples: float) -> int:
        if self._params.num_chunks is not None:
            return int(min(self._params.num_chunks, examples))
        if self._params.chunk_remainder == "kept":
            return max(1, -(-int(examples) // self._params.chunk_size))
        return max(1, int(examples) // self._params.chunk_size)

    @override
    def state_dict(self) -> ClientState:
        state = super().state_dict()
        state.arrays.update(self.average)
        state.arrays.update(cache_to_arrays(self.cache))
        return state

    @override
    def load_state_dict(self, state: ClientState) -> None:
        super().load_state_dict(ClientState(arrays=without_means(state.arrays), config=state.config))
        self.average = {name: state.arrays[name] for name in (AVERAGE_X, AVERAGE_Y) if name in state.arrays}
        self.cache = cache_from_arrays(state.arrays)
