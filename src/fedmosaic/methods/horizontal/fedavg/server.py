"""FedAvg's server: example-weighted averaging of full models (optionally from a centrally pre-trained start)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from typing_extensions import override

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.devices import to_device
from fedmosaic.federation import ArraySpec, ClientState, Message, ReplySpec, RoundContext, ServerLogic, derive_seed
from fedmosaic.federation.message import as_float
from fedmosaic.methods.arrays import load_arrays, model_to_arrays, seeded, to_tensor
from fedmosaic.methods.horizontal.fedavg.client import ModelFactory
from fedmosaic.methods.horizontal.models import Classifier
from fedmosaic.methods.horizontal.probes import Probe
from fedmosaic.methods.horizontal.task import Pretraining
from fedmosaic.methods.training import DP_SGD_EPSILON, evaluate_classifier, train_epochs
from fedmosaic.models.export import ModelExport

PRETRAINED = "pretrained_"
"""Prefix of the metrics of the pre-trained initial model, repeated in every evaluation."""


class FedAvgServer(ServerLogic):
    """Example-weighted averaging of full models.

    Parameters
    ----------
    model_factory : callable () -> torch.nn.Module
        Builds the (untrained) global model.
    test : ArrayDataset
        The global test set the server evaluates on.
    pretraining : Pretraining or None, default None
        Train the initial model centrally first (from derived randomness);
        every evaluation then also reports the pre-trained model's metrics,
        prefixed ``pretrained_`` (the start the federation should not fall
        below).
    probes : sequence of Probe, default ()
        Further measurements added to every evaluation (e.g. colour reliance).
    """

    def __init__(
        self,
        model_factory: ModelFactory,
        test: ArrayDataset,
        pretraining: Pretraining | None = None,
        probes: Sequence[Probe] = (),
    ) -> None:
        self._pretraining = pretraining
        self._probes = tuple(probes)
        self._start: dict[str, float] = {}
        self._model_factory = model_factory
        self._model: nn.Module | None = None
        self._test_x = to_tensor(test.x)
        self._test_y = to_tensor(test.y)
        self._num_classes = test.num_classes
        self.params: dict[str, np.ndarray] = {}

    @override
    def initialize(self, seed: int) -> None:
        self._model = to_device(seeded(derive_seed(seed, "init"), self._model_factory))
        if self._pretraining is not None:
            data = self._pretraining.data
            train_epochs(
                self._model,
                to_tensor(data.x),
                to_tensor(data.y),
                params=self._pretraining.params,
                generator=torch.Generator().manual_seed(derive_seed(seed, "pretrain")),
            )
        self.params = model_to_arrays(self._model)
        self._start = {}
        if self._pretraining is not None:
            self._start = {f"{PRETRAINED}{name}": value for name, value in self.evaluate(0).items()}

    @override
    def run_round(self, ctx: RoundContext) -> dict[str, float]:
        message = Message(arrays=self.params, config={"round": ctx.round})
        self.params, replies = ctx.exchange_aggregated(
            dict.fromkeys(ctx.clients, message), expect=self.reply_spec(), reference=self.params
        )
        return training_metrics(list(replies.values()))

    def reply_spec(self) -> ReplySpec:
        """What a client's reply may hold: the model as sent, its example count and loss."""
        return ReplySpec.like(
            self.params, metrics={"num_examples", "train_loss"}, optional_metrics=frozenset({DP_SGD_EPSILON})
        )

    def mean_specs(self, x_name: str, y_name: str) -> dict[str, ArraySpec]:
        """Specs of shared means: inputs ``(m, *input_shape)`` and one-hot labels ``(m, classes)``, float32."""
        return {
            x_name: ArraySpec((None, *self._test_x.shape[1:]), "float32"),
            y_name: ArraySpec((None, self._num_classes), "float32"),
        }

    @override
    def evaluate(self, rnd: int) -> dict[str, float]:
        model = self._require_model()
        load_arrays(model, self.params)
        metrics = evaluate_classifier(model, self._test_x, self._test_y)
        for probe in self._probes:
            metrics.update(probe(model))
        return {**metrics, **self._start}

    def exported_model(self) -> ModelExport | None:
        """The global model (the one :meth:`evaluate` tests); None when built from a bare factory."""
        if not isinstance(self._model_factory, Classifier):
            return None
        return ModelExport("classifier", self._model_factory.to_json(), dict(self.params))

    @override
    def state_dict(self) -> ClientState:
        return ClientState(arrays=dict(self.params), config=dict(self._start))

    @override
    def load_state_dict(self, state: ClientState) -> None:
        self._require_model()
        self.params = dict(state.arrays)
        self._start = {k: as_float(v) for k, v in state.config.items() if k.startswith(PRETRAINED)}

    def _require_model(self) -> nn.Module:
        if self._model is None:
            self._model = to_device(self._model_factory())
        return self._model


def training_metrics(replies: list[Message]) -> dict[str, float]:
    """The round's example-weighted training loss and, with local DP-SGD, the largest epsilon a client has spent."""
    weights = [reply.metrics["num_examples"] for reply in replies]
    losses = [reply.metrics["train_loss"] for reply in replies]
    metrics = {"train_loss": float(np.average(losses, weights=weights))}
    spent = [reply.metrics[DP_SGD_EPSILON] for reply in replies if DP_SGD_EPSILON in reply.metrics]
    if spent:
        metrics[f"{DP_SGD_EPSILON}_max"] = max(spent)
    return metrics
