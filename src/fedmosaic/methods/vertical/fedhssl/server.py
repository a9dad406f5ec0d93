"""FedHSSL: cross-party and local SimSiam pre-training, averaged top layers, then Vanilla VFL fine-tuning.

The server logic is the active party; passive parties are clients
(:mod:`fedmosaic.methods.vertical.fedhssl.client`). Every party holds a
:class:`~fedmosaic.methods.vertical.fedhssl.simsiam.SimSiamParty`.

Each pre-training round (``1..pretrain_rounds``) is one epoch of:

1. **Cross-party SimSiam** on the aligned rows (rows every party holds; none
   below two, as batch normalisation needs two), one
   exchange per mini-batch: rows down with the gradients of the previous
   batch's predictions, each party's ``projection`` and ``prediction`` up.
   The active party computes
   :func:`~fedmosaic.methods.vertical.fedhssl.simsiam.cross_party_loss` over the
   parties heard, steps its own networks and keeps each party's cross-party
   representation of the batch
   (:func:`~fedmosaic.methods.vertical.fedhssl.simsiam.cross_party_targets`).
2. **Local SimSiam** (one exchange): the last gradients, the aligned rows and
   the party's cross-party representations of them down; the party runs
   :func:`~fedmosaic.methods.vertical.fedhssl.simsiam.local_epoch` over every row it
   holds and replies with its top layers (everything above its input layer).
   The active party does the same on its own rows.
3. **Average of the top layers** (one exchange): the active party, acting as
   server, averages the top layers of every party heard (its own included,
   equal weights) and sends the average down; each party loads it. Input
   layers, whose widths differ by party, stay local.

The remaining rounds fine-tune the encoders and a concatenation head on the
fully aligned labeled rows (``passes`` epochs per round) exactly as Vanilla VFL
(:class:`~fedmosaic.methods.vertical.split.server.SplitServer` with
:class:`~fedmosaic.methods.vertical.split.baselines.Concatenation`), starting from
the pre-trained encoders; missing blocks are zero-filled at test time.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import torch
from typing_extensions import override

from fedmosaic.data.vertical_data import VerticalSplit
from fedmosaic.devices import to_device
from fedmosaic.federation import ClientState, Message, RoundContext, ServerLogic, derive_seed
from fedmosaic.methods.arrays import load_arrays, model_to_arrays, seeded, to_array, to_tensor
from fedmosaic.methods.declared_state import INT, DeclaredState
from fedmosaic.methods.vertical.fedhssl.params import FedHSSLParams
from fedmosaic.methods.vertical.fedhssl.simsiam import (
    SimSiamParty,
    average_top_layers,
    batch_count,
    cross_party_loss,
    cross_party_targets,
    local_epoch,
    spread_targets,
    top_layers,
)
from fedmosaic.methods.vertical.optimizer_state import load_optimizer_arrays, optimizer_to_arrays
from fedmosaic.methods.vertical.replies import acknowledgement_spec, top_layers_spec, views_spec
from fedmosaic.methods.vertical.split.baselines import Concatenation
from fedmosaic.methods.vertical.split.server import SplitServer
from fedmosaic.methods.vertical.task import VerticalTask
from fedmosaic.methods.vertical.tensors import gradient, leaf, tensor
from fedmosaic.models.export import ModelExport

SSL, FINETUNE = "ssl.", "finetune."
STATE = DeclaredState({"seed": INT}, attribute_prefix="_")
"""The active party's own state besides its arrays (the fine-tuning's is the split server's)."""


class FedHSSLServer(ServerLogic):
    """The active party of FedHSSL (see the module docstring for the protocol).

    Parameters
    ----------
    task : VerticalTask
        Data and evaluation schedule.
    params : FedHSSLParams
        Hyper-parameters.
    """

    def __init__(self, task: VerticalTask, params: FedHSSLParams) -> None:
        self._task, self._params = task, params
        self._build = partial(SimSiamParty, task.data.widths[0], params.hidden, params.embedding, params.layers)
        self._model = self._build()
        self._optimizer = params.optimizer_spec().build(self._model.parameters())
        self._finetune = SplitServer(
            task, params, Concatenation(unaligned=task.fallback), first_round=params.pretrain_rounds + 1
        )
        self._aligned = np.flatnonzero(task.data.train.present.all(axis=1))
        self._seed = 0

    @override
    def initialize(self, seed: int) -> None:
        self._seed = seed
        self._model = to_device(seeded(derive_seed(seed, "active-party", "ssl"), self._build))
        self._optimizer = self._params.optimizer_spec().build(self._model.parameters())
        self._finetune.initialize(seed)

    @override
    def run_round(self, ctx: RoundContext) -> dict[str, float]:
        if ctx.round > self._params.pretrain_rounds:
            return self._finetune.run_round(ctx)
        metrics = self._pretrain_epoch(ctx)
        if ctx.round == self._params.pretrain_rounds:
            self._finetune.load_encoder(model_to_arrays(self._model.encoder))
        return metrics

    @override
    def evaluate(self, rnd: int) -> dict[str, float]:
        return self._finetune.evaluate(rnd) if rnd > self._params.pretrain_rounds else {}

    @override
    def artifacts(self) -> dict[str, Any]:
        return self._finetune.artifacts() | {
            "pretrain_rounds": self._params.pretrain_rounds,
            "aligned_rows": len(self._aligned),
        }

    def exported_model(self) -> ModelExport:
        """The fine-tuned model, exported as Vanilla VFL's (the pre-training networks above the encoders are not part of it)."""
        return self._finetune.exported_model()

    # ------------------------------------------------------------ pre-training
    def _pretrain_epoch(self, ctx: RoundContext) -> dict[str, float]:
        split = self._task.data.train
        aligned = self._aligned
        targets, gradients, cross_loss = self._cross_party_epoch(ctx, split, aligned)
        own = np.flatnonzero(split.present[:, 0])
        replies = ctx.exchange(
            {
                c: Message(
                    arrays={"aligned": aligned, "target": to_array(targets[:, c + 1]), **gradients.get(c, {})},
                    config={"action": "local"},
                )
                for c in ctx.clients
            },
            expect=top_layers_spec(top_layers(self._model), "train"),
        )
        generator = torch.Generator().manual_seed(derive_seed(self._seed, ctx.round, "local-ssl"))
        local_loss = local_epoch(
            self._model,
            self._optimizer,
            to_tensor(np.nan_to_num(split.blocks[0][own])),
            spread_targets(own, aligned, targets[:, 0]),
            to_tensor(np.isin(own, aligned)),
            batch_size=self._params.batch_size,
            noise_std=self._params.noise_std,
            mask_rate=self._params.mask_rate,
            pull=self._params.pull,
            generator=generator,
        )
        average = average_top_layers(self._model, [reply.arrays for reply in replies.values()])
        ctx.exchange(
            {c: Message(arrays=average, config={"action": "average"}) for c in ctx.clients},
            expect=acknowledgement_spec("train"),
        )
        return {"cross_party_loss": cross_loss, "local_ssl_loss": local_loss}

    def _cross_party_epoch(
        self, ctx: RoundContext, split: VerticalSplit, aligned: np.ndarray
    ) -> tuple[torch.Tensor, dict[int, dict[str, np.ndarray]], float]:
        """Cross-party SimSiam over the aligned rows.

        Returns
        -------
        tuple
            Every party's cross-party representation of the aligned rows
            ``(len(aligned), K, e)`` (zeros where a party was not heard),
            the gradients of the last batch's predictions by client, and the
            epoch's mean loss.
        """
        parties, width = self._task.data.num_parties, self._params.embedding
        targets = to_device(torch.zeros(len(aligned), parties, width))
        gradients: dict[int, dict[str, np.ndarray]] = {}
        order = np.random.default_rng(derive_seed(self._seed, ctx.round, "aligned")).permutation(len(aligned))
        batches = (
            [np.sort(b) for b in np.array_split(order, batch_count(len(order), self._params.batch_size))]
            if len(order) > 1
            else []
        )
        total = 0.0
        for positions in batches:
            rows = aligned[positions]
            replies = ctx.exchange(
                {
                    c: Message(arrays={"rows": rows, **gradients.get(c, {})}, config={"action": "cross"})
                    for c in ctx.clients
                },
                expect=views_spec(len(rows), width, "train"),
            )
            heard = sorted(replies)
            z, p = self._model.views(to_tensor(split.blocks[0][rows]))
            remote = {c: leaf(replies[c].arrays["prediction"]) for c in heard}
            projections = torch.stack([z] + [tensor(replies[c].arrays["projection"]) for c in heard], dim=1)
            predictions = torch.stack([p] + [remote[c] for c in heard], dim=1)
            loss = cross_party_loss(projections, predictions)
            self._optimizer.zero_grad()
            loss.backward()
            self._optimizer.step()
            gradients = {c: {"grad.prediction": gradient(value)} for c, value in remote.items()}
            targets[positions[:, None], np.array([0] + [c + 1 for c in heard])] = cross_party_targets(projections)
            total += float(loss.detach()) * len(rows)
        return targets, gradients, total / max(len(aligned), 1)

    # ------------------------------------------------------------------- state
    @override
    def state_dict(self) -> ClientState:
        finetune = self._finetune.state_dict()
        arrays = {f"{SSL}model.{k}": v for k, v in model_to_arrays(self._model).items()}
        arrays |= optimizer_to_arrays(self._optimizer, f"{SSL}opt.")
        arrays |= {FINETUNE + k: v for k, v in finetune.arrays.items()}
        config: dict[str, Any] = STATE.save(self) | {FINETUNE + k: v for k, v in finetune.config.items()}
        return ClientState(arrays=arrays, config=config)

    @override
    def load_state_dict(self, state: ClientState) -> None:
        model = f"{SSL}model."
        load_arrays(self._model, {k[len(model) :]: v for k, v in state.arrays.items() if k.startswith(model)})
        self._optimizer = self._params.optimizer_spec().build(self._model.parameters())
        load_optimizer_arrays(self._optimizer, state.arrays, f"{SSL}opt.")
        STATE.load(self, state.config)
        self._finetune.load_state_dict(
            ClientState(
                arrays={k[len(FINETUNE) :]: v for k, v in state.arrays.items() if k.startswith(FINETUNE)},
                config={k[len(FINETUNE) :]: v for k, v in state.config.items() if k.startswith(FINETUNE)},
            )
        )
