"""The F-CMs client: registers its concepts and beliefs, trains the modules it has labels for."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal, cast

import numpy as np
import torch
from typing_extensions import override

from fedmosaic.devices import to_device
from fedmosaic.federation import ClientContext, ClientJob, ClientLogic, ClientState, Message, derive_rng
from fedmosaic.federation.message import as_int
from fedmosaic.methods.arrays import load_arrays, to_array, to_tensor
from fedmosaic.methods.concepts.models import ConceptModel, build_concept_model
from fedmosaic.methods.concepts.objective import Objective
from fedmosaic.methods.concepts.params import FCMParams
from fedmosaic.methods.concepts.privacy import randomized_response
from fedmosaic.methods.concepts.stacked import LocalFit, stackable, train_stacked
from fedmosaic.methods.concepts.task import ConceptClientData, decode_graph
from fedmosaic.methods.train_params import TrainParams
from fedmosaic.methods.training import DP_SGD_EPSILON, dp_sgd_epsilon, train_epochs

REGISTER = "query.register"
TRAIN = "train"
OPTIMIZER_STATE: Literal["fresh", "kept"] = "kept"
"""F-CMs' training regime where ``train.optimizer_state`` is unset: each client keeps its optimizer across rounds.

A client whose Adam starts afresh every round moves each parameter by about
``lr`` per step whatever its gradient's size (Adam's first step is
``lr * sign(gradient)``); with the one or two full-batch steps a round of a
client with fewer rows than a batch, the global model then never settles and
swings between two states from round to round (insurance CGM: task accuracy
57% and 40% by turns). Kept moments let the steps shrink where the gradient
changes sign (``docs/methods/fcm.md``, training regime).
"""


class FCMClient(ClientLogic):
    """Answers registration and training messages.

    Parameters
    ----------
    data : ConceptClientData
        The client's private samples and confidence matrix.
    params : FCMParams
        Method parameters.
    train : TrainParams
        Local training hyper-parameters.
    cardinalities : dict of str to int
        Number of values of the client's concepts.
    """

    def __init__(
        self, data: ConceptClientData, params: FCMParams, train: TrainParams, cardinalities: dict[str, int]
    ) -> None:
        self._data = data
        self._params = params
        self._train = train
        self._cardinalities = {n: int(cardinalities[n]) for n in data.train.names}
        self._model: ConceptModel | None = None
        self._model_graph = ""

    @override
    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        if message.kind == REGISTER:
            return self._register(context)
        if message.kind == TRAIN:
            return self._fit(message, state, context)
        raise ValueError(f"F-CMs client cannot handle message kind {message.kind!r}")

    def _register(self, context: ClientContext) -> Message:
        confidence = self._data.confidence
        if self._params.graph_epsilon is not None:
            rng = derive_rng(context.seed, "randomized-response")
            confidence = randomized_response(confidence, self._params.graph_epsilon, rng)
        return Message(
            kind=REGISTER,
            arrays={"confidence": np.asarray(confidence.values, dtype=np.float64)},
            config={
                "concepts": json.dumps(list(self._data.train.names)),
                "confidence_names": json.dumps(list(confidence.names)),
                "cardinalities": json.dumps(self._cardinalities),
            },
            metrics={"num_examples": float(len(self._data.train))},
        )

    @override
    def batch_key(self, message: Message) -> tuple[str, str, str] | None:
        """Training messages of one graph and training settings are trained together (:mod:`~fedmosaic.methods.concepts.stacked`).

        Not with DP-SGD (Opacus clips each client's per-example gradients) nor with SGD.
        """
        if message.kind != TRAIN or not stackable(self._train):
            return None
        return TRAIN, str(message.config["graph"]), self._train.model_dump_json()

    @override
    @classmethod
    def handle_many(cls, jobs: Sequence[ClientJob]) -> list[Message]:
        fits: dict[int, LocalFit] = {}
        replies: dict[int, Message] = {}
        for k, job in enumerate(jobs):
            client = cast(FCMClient, job.logic)
            prepared = client._prepare(job.message, job.state, job.context)
            if isinstance(prepared, Message):
                replies[k] = prepared
            else:
                fits[k] = prepared
        losses = train_stacked(list(fits.values()), cast(FCMClient, jobs[0].logic)._train) if fits else []
        for (k, fit), loss in zip(fits.items(), losses, strict=True):
            replies[k] = cast(FCMClient, jobs[k].logic)._reply(fit, loss, jobs[k].state)
        return [replies[k] for k in range(len(jobs))]

    def _fit(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        prepared = self._prepare(message, state, context)
        if isinstance(prepared, Message):
            return prepared
        fit = prepared
        train_loss = train_epochs(
            fit.model,
            fit.x,
            fit.values,
            params=self._train,
            generator=fit.generator,
            loss_fn=lambda model, xb, vb: fit.objective.loss(fit.model, xb, vb, fit.generator),
            kept=fit.kept,
        )
        return self._reply(fit, train_loss, state)

    def _prepare(self, message: Message, state: ClientState, context: ClientContext) -> LocalFit | Message:
        """The received model, objective and data of a training message; the reply where there is nothing to train."""
        graph_text = str(message.config["graph"])
        graph = decode_graph(graph_text)
        model = self._model_for(graph_text, context)
        load_arrays(model, message.arrays, strict=False)
        labeled = tuple(n for n in graph.nodes if n in self._data.train.names)
        objective = Objective(
            graph, labeled, self._params.gamma, self._params.intervention_prob, self._params.concept_loss == "mean"
        )
        masked = self._params.aggregation == "module"
        trained_prefixes = (model.ENCODER_PREFIX, *(model.node_prefix(n) for n in labeled))
        for name, parameter in model.named_parameters():
            parameter.requires_grad_(not masked or name.startswith(trained_prefixes))
        if not labeled:
            # Nothing of this model is the client's to train or validate.
            return Message(metrics={"num_examples": float(len(self._data.train)), "val_examples": 0.0})
        return LocalFit(
            model=model,
            objective=objective,
            x=to_tensor(self._data.train.x),
            values=to_tensor(self._data.train.aligned(graph.nodes)),
            generator=torch.Generator().manual_seed(context.seed),
            kept=state.arrays if (self._train.optimizer_state or OPTIMIZER_STATE) == "kept" else None,
            uploaded=trained_prefixes if masked else None,
            validation=self._validation(model, objective, graph.nodes),
        )

    def _reply(self, fit: LocalFit, train_loss: float, state: ClientState) -> Message:
        """The reply after training: the trained modules, sample counts, losses (and DP-SGD's epsilon)."""
        uploaded = {
            name: to_array(tensor).copy()
            for name, tensor in fit.model.state_dict().items()
            if fit.uploaded is None or name.startswith(fit.uploaded)
        }
        metrics = {
            "num_examples": float(len(self._data.train)),
            "train_loss": train_loss,
            "val_examples": float(len(self._data.val)),
            "val_task_examples": float(len(self._data.val))
            if fit.objective.graph.task in fit.objective.labeled
            else 0.0,
            **fit.validation,
        }
        if self._train.dp_noise_multiplier > 0:
            rounds = as_int(state.config.get("dp_rounds", 0)) + 1
            state.config["dp_rounds"] = rounds
            metrics[DP_SGD_EPSILON] = dp_sgd_epsilon(self._train, len(self._data.train), rounds)
        return Message(arrays=uploaded, metrics=metrics)

    def _model_for(self, graph_text: str, context: ClientContext) -> ConceptModel:
        if self._model is None or graph_text != self._model_graph:
            graph = decode_graph(graph_text)
            model = build_concept_model(self._data.train.x.shape[1], graph, self._params.model, seed=context.seed)
            self._model = to_device(model)
            # Opacus records DP-SGD's per-example gradients on each node's own layers as they are called.
            self._model.per_node = self._train.dp_noise_multiplier > 0
            self._model_graph = graph_text
        return self._model

    def _validation(self, model: ConceptModel, objective: Objective, nodes: tuple[str, ...]) -> dict[str, float]:
        """Validation losses of the received model (none without validation rows)."""
        if len(self._data.val) == 0:
            return {}
        model.eval()
        x = to_tensor(self._data.val.x)
        values = to_tensor(self._data.val.aligned(nodes))
        return objective.validation(model, x, values)
