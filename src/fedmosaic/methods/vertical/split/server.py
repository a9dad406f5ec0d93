"""The active party of the split-network baselines, one training loop for all of them.

Every party embeds its block with its own encoder; the active party combines
the embeddings with a head that depends on the baseline
(:mod:`fedmosaic.methods.vertical.split.baselines`). One exchange per mini-batch:
rows down with the gradients of the previous batch's embeddings, embeddings
up (one last ``update`` exchange ends the epoch). With a validation split,
every round then embeds the validation rows (one exchange); when their
accuracy is the best so far, every party keeps its model (one ``keep``
exchange), and training stops after ``patience`` rounds without a better one.
Evaluation rounds embed the test rows with the kept models (the round
selected on validation; the current ones without a validation split or with
``test_round = "last"``); those are the models the run exports, each party's
encoder in its own part. Under the paper protocol the aligned-only baselines
predict the test rows not every party holds by their fallback
(:func:`~fedmosaic.methods.vertical.split.baselines.aligned_only`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from typing_extensions import override

from fedmosaic.data.vertical_data import VALIDATION, Shape, VerticalSplit, card_shapes
from fedmosaic.devices import to_device
from fedmosaic.federation import ClientState, Message, RoundContext, ServerLogic, derive_seed
from fedmosaic.federation.message import ConfigValue
from fedmosaic.methods.architectures import own_model_entries
from fedmosaic.methods.arrays import load_arrays, model_to_arrays, seeded, to_tensor
from fedmosaic.methods.declared_state import INT, DeclaredState
from fedmosaic.methods.vertical.networks import mlp
from fedmosaic.methods.vertical.optimizer_state import load_optimizer_arrays, optimizer_to_arrays
from fedmosaic.methods.vertical.replies import acknowledgement_spec, embedding_spec
from fedmosaic.methods.vertical.selection import Selection
from fedmosaic.methods.vertical.split.baselines import Baseline, accuracy, aligned_only, baseline_spec
from fedmosaic.methods.vertical.split.params import SplitVFLParams
from fedmosaic.methods.vertical.task import VerticalTask
from fedmosaic.methods.vertical.tensors import (
    evaluation_config,
    evaluation_from_config,
    gradient,
    heard,
    leaf,
    spread,
    tensor,
)
from fedmosaic.models.export import ModelExport

STATE = DeclaredState({"seed": INT, "steps": INT, "trained_round": INT}, attribute_prefix="_")
"""The active party's counters (its models, optimizer and best model are arrays)."""


class SplitServer(ServerLogic):
    """Active party of a split-network baseline.

    Parameters
    ----------
    task : VerticalTask
        Data and evaluation schedule.
    params : SplitVFLParams
        Hyper-parameters.
    baseline : Baseline
        What differs between the baselines.
    first_round : int, default 1
        The first round it trains (FedHSSL's fine-tuning: after pre-training).

    Each round makes :meth:`epochs` epochs (each draws its batches from the
    round's generator, so one pass is the plain epoch).
    """

    def __init__(self, task: VerticalTask, params: SplitVFLParams, baseline: Baseline, first_round: int = 1) -> None:
        self._task, self._params, self._baseline = task, params, baseline
        self._first_round = first_round
        data = task.data
        self._build = partial(active_model, data.party_shapes[0], data.num_parties, data.num_classes, params, baseline)
        self._model = to_device(self._build())
        self._optimizer = params.optimizer_spec().build(self._model.parameters())
        self._seed = 0
        self._last_evaluation: dict[str, float] = {}
        self._selection = Selection(params.patience)
        self._best: dict[str, np.ndarray] = {}
        self._steps = self._trained_round = 0
        labels = data.train.y[data.train.labeled]
        self._majority = int(np.bincount(labels, minlength=data.num_classes).argmax()) if len(labels) else 0

    @override
    def initialize(self, seed: int) -> None:
        self._seed = seed
        self._model = to_device(seeded(derive_seed(seed, "active-party"), self._build))
        self._optimizer = self._params.optimizer_spec().build(self._model.parameters())
        self._last_evaluation = {}
        self._selection = Selection(self._params.patience)
        self._best = {}
        self._steps = self._trained_round = 0

    def load_encoder(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Start the active party's encoder from ``arrays`` (a pre-trained one); the optimizer starts afresh."""
        load_arrays(self._model["encoder"], arrays)
        self._optimizer = self._params.optimizer_spec().build(self._model.parameters())

    def epochs(self, rnd: int) -> int:
        """Epochs of round ``rnd``: ``epochs`` spread evenly over the rounds it trains, else ``passes`` (tuned protocol) or one (paper).

        Examples
        --------
        >>> import numpy as np
        >>> from fedmosaic.data.vertical_data import VerticalData, VerticalSplit
        >>> from fedmosaic.methods.vertical.split.baselines import Local
        >>> split = VerticalSplit([np.zeros((2, 1), np.float32)], np.ones((2, 1), bool), np.array([0, 1]))
        >>> task = VerticalTask(VerticalData(split, {"MCAR 0": split}, 2, "gaussian"), rounds=4)
        >>> server = SplitServer(task, SplitVFLParams(epochs=10), Local())
        >>> [server.epochs(r) for r in range(1, 5)]
        [2, 3, 2, 3]
        """
        if self._params.epochs is not None:
            trained = self._task.rounds - self._first_round + 1
            done = rnd - self._first_round
            return (done + 1) * self._params.epochs // trained - done * self._params.epochs // trained
        return 1 if self._task.paper else self._params.passes

    @property
    def _validation(self) -> VerticalSplit | None:
        """The validation split the round is selected on (none with ``test_round = "last"``)."""
        return self._task.data.validation if self._params.test_round == "best" else None

    @override
    def run_round(self, ctx: RoundContext) -> dict[str, float]:
        generator = torch.Generator().manual_seed(derive_seed(self._seed, ctx.round, "batches"))
        metrics: dict[str, float] = {}
        validation = self._validation
        if not self._selection.stopped:
            for _ in range(self.epochs(ctx.round)):
                metrics = self._train_epoch(ctx, generator)
            self._trained_round = ctx.round
            if validation is not None:
                metrics["validation_accuracy"] = self._evaluate(ctx, VALIDATION, validation, best=False)
                if self._selection.offer(ctx.round, metrics["validation_accuracy"]):
                    self._keep(ctx)
        if self._task.evaluates(ctx.round):
            best = validation is not None
            self._last_evaluation = self._task.test_accuracies(
                lambda name, split: self._evaluate(ctx, name, split, best=best)
            )
        return metrics

    @override
    def evaluate(self, rnd: int) -> dict[str, float]:
        return dict(self._last_evaluation)

    @override
    def artifacts(self) -> dict[str, Any]:
        validation = self._validation
        return {
            "training_rows": len(self._baseline.train_rows(self._task.data.train)),
            **self._selection.record(0 if validation is None else len(validation), self._steps, self._trained_round),
        }

    def exported_model(self) -> ModelExport:
        """The models the run tests (:meth:`_evaluate`): the active party's encoder and head here, each passive party's encoder in its own part."""
        data, params = self._task.data, self._params
        tested = self._best if self._validation is not None and self._best else model_to_arrays(self._model)
        architecture = {
            "widths": list(data.widths),
            **card_shapes(data),
            "num_classes": data.num_classes,
            "hidden": params.hidden,
            "embedding": params.embedding,
            "layers": params.layers,
            "head_layers": params.head_depth,
            **own_model_entries(model=params.model),
            "baseline": baseline_spec(self._baseline),
            "fallback": self._majority,
        }
        passive = tuple(f"party-{k}" for k in range(1, data.num_parties)) if self._baseline.uses_passive_parties else ()
        return ModelExport("split-vfl", architecture, tested, part="party-0", client_parts=passive)

    def _keep(self, ctx: RoundContext) -> None:
        """Every party keeps its current model as the one selected on validation."""
        self._best = model_to_arrays(self._model)
        if self._baseline.uses_passive_parties:
            ctx.exchange(
                {c: Message(config={"action": "keep"}, kind="evaluate") for c in ctx.clients},
                expect=acknowledgement_spec("evaluate"),
            )

    def _train_epoch(self, ctx: RoundContext, generator: torch.Generator) -> dict[str, float]:
        split = self._task.data.train
        rows = self._baseline.train_rows(split)
        if len(rows) == 0:
            return {}
        order = rows[torch.randperm(len(rows), generator=generator).numpy()]
        gradients: dict[int, dict[str, np.ndarray]] = {}
        losses = []
        for batch in np.array_split(order, max(1, math.ceil(len(order) / self._params.batch_size))):
            batch = np.sort(batch)
            present = to_tensor(split.present[batch])
            remote = {c: leaf(e) for c, e in self._embed(ctx, "train", batch, present, gradients, train=True).items()}
            present = heard(present, remote)
            embeddings = self._embeddings(self._model, split, batch, present, remote)
            loss = self._baseline.loss(self._model["head"], embeddings, present, to_tensor(split.y[batch]), generator)
            self._optimizer.zero_grad()
            loss.backward()
            self._optimizer.step()
            self._steps += 1
            gradients = {c: {"grad.embedding": gradient(value)} for c, value in remote.items()}
            losses.append(float(loss.detach()) * len(batch))
        if gradients:
            ctx.exchange(
                {c: Message(arrays=g, config={"action": "update"}) for c, g in gradients.items()},
                expect=acknowledgement_spec("train"),
            )
        return {"train_loss": sum(losses) / len(rows)}

    def _evaluate(self, ctx: RoundContext, name: str, split: VerticalSplit, *, best: bool) -> float:
        """Accuracy on ``split``, of the kept models with ``best`` (each party's and the active party's)."""
        rows = np.arange(len(split))
        present = to_tensor(split.present[rows])
        model = self._model
        if best and self._best:
            model = to_device(self._build())
            load_arrays(model, self._best)
        with torch.no_grad():
            remote = {
                c: tensor(e) for c, e in self._embed(ctx, name, rows, present, {}, train=False, best=best).items()
            }
            filled = heard(filled_at_test(self._baseline, present), remote)
            embeddings = self._embeddings(model, split, rows, filled, remote)
            heard_present = heard(present, remote)
            votes = self._baseline.votes(model["head"], embeddings, heard_present, self._majority)
            generator = torch.Generator().manual_seed(derive_seed(self._seed, name, "unaligned"))
            votes = aligned_only(votes, heard_present, self._baseline.unaligned, self._majority, generator)
            return accuracy(votes, to_tensor(split.y))

    def _embed(
        self,
        ctx: RoundContext,
        name: str,
        rows: np.ndarray,
        present: Tensor,
        gradients: dict[int, dict[str, np.ndarray]],
        *,
        train: bool,
        best: bool = False,
    ) -> dict[int, np.ndarray]:
        """The valid embeddings of the passive parties (of their kept models with ``best``); ``present`` ``(len(rows), K)`` sizes each reply."""
        if not self._baseline.uses_passive_parties:
            return {}
        zero_fill = self._baseline.zero_fill_at_test and not train
        config: dict[str, ConfigValue] = {
            "action": "embed",
            "split": name,
            "train": train,
            "zero_fill": zero_fill,
            "best": best,
        }
        kind = "train" if train else "evaluate"
        sizes = {c: len(rows) if config["zero_fill"] else int(present[:, c + 1].sum()) for c in ctx.clients}
        replies = ctx.exchange(
            {c: Message(arrays={"rows": rows, **gradients.get(c, {})}, config=config, kind=kind) for c in ctx.clients},
            expect={c: embedding_spec(sizes[c], self._params.embedding, kind) for c in ctx.clients},
        )
        return {c: reply.arrays["embedding"] for c, reply in replies.items()}

    def _embeddings(
        self, model: nn.ModuleDict, split: VerticalSplit, rows: np.ndarray, filled: Tensor, remote: dict[int, Tensor]
    ) -> Tensor:
        """``(n, K, e)`` embeddings, zeros for parties absent from ``filled`` (or not taking part)."""
        x = to_tensor(np.nan_to_num(split.blocks[0][rows]))
        own = model["encoder"](x[filled[:, 0]])
        return stack_embeddings(
            [own] + [remote.get(party - 1) for party in range(1, self._task.data.num_parties)], filled
        )

    @override
    def state_dict(self) -> ClientState:
        arrays = {f"model.{k}": v for k, v in model_to_arrays(self._model).items()} | optimizer_to_arrays(
            self._optimizer
        )
        arrays |= {f"best.{k}": v for k, v in self._best.items()}
        config: dict[str, Any] = STATE.save(self)
        config |= evaluation_config(self._last_evaluation) | self._selection.config()
        return ClientState(arrays=arrays, config=config)

    @override
    def load_state_dict(self, state: ClientState) -> None:
        load_arrays(self._model, {k[6:]: v for k, v in state.arrays.items() if k.startswith("model.")})
        self._optimizer = self._params.optimizer_spec().build(self._model.parameters())
        load_optimizer_arrays(self._optimizer, state.arrays)
        self._best = {k[5:]: np.array(v) for k, v in state.arrays.items() if k.startswith("best.")}
        STATE.load(self, state.config)
        self._last_evaluation = evaluation_from_config(state.config)
        self._selection.load(state.config)


def encoder(shape: Shape, params: SplitVFLParams, party: int) -> nn.Module:
    """Party ``party``'s encoder of its flat block of examples of ``shape`` (every party has one): the MLP, or ``params.model``'s."""
    if params.model is not None:
        return params.model.build_on_block(shape, params.embedding, party=party)
    return mlp(math.prod(shape), params.hidden, params.embedding, params.layers)


def active_model(
    shape: Shape, num_parties: int, num_classes: int, params: SplitVFLParams, baseline: Baseline
) -> nn.ModuleDict:
    """The active party's networks: its ``encoder`` and the baseline's ``head``."""
    return nn.ModuleDict(
        {"encoder": encoder(shape, params, 0), "head": baseline.head(num_parties, params, num_classes)}
    )


def filled_at_test(baseline: Baseline, present: Tensor) -> Tensor:
    """The blocks embedded at test time: every row's (zero-filled where absent) for Vanilla VFL, else the present ones."""
    return torch.ones_like(present) if baseline.zero_fill_at_test else present


def stack_embeddings(embeddings: Sequence[Tensor | None], filled: Tensor) -> Tensor:
    """``(n, K, e)``: each party's embeddings of its ``filled`` rows spread to all rows, zeros elsewhere.

    A party without embeddings (None: not taking part or not heard) is all
    zeros; party 0's are given.
    """
    first = embeddings[0]
    assert first is not None
    parts = [spread(first, filled[:, 0])]
    for party, embedding in enumerate(embeddings[1:], start=1):
        parts.append(torch.zeros_like(parts[0]) if embedding is None else spread(embedding, filled[:, party]))
    return torch.stack(parts, dim=1)
