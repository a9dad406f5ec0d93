"""FedHSSL's passive party: SimSiam views and local pre-training, then a Vanilla VFL party.

Actions (``message.config["action"]``), besides those of
:class:`~fedmosaic.methods.vertical.split.client.SplitClient` (``embed``,
``update``) used by fine-tuning:

``cross``
    Apply ``grad.prediction`` of the previous batch if the message carries
    it, then reply with ``projection`` and ``prediction`` of the requested
    (aligned) ``rows``, remembered for the coming gradient.
``local``
    Apply the last ``grad.prediction`` if any, then run one epoch of local
    SimSiam over every row the party holds, pulled toward ``target``, the
    party's cross-party representations of the ``aligned`` rows; reply with
    the top layers (every tensor above the input layer).
``average``
    Load the averaged top layers; reply with nothing.

The first fine-tuning message starts a fresh optimizer over the pre-trained
networks.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from typing_extensions import override

from fedmosaic.data.vertical_data import VerticalSplit
from fedmosaic.federation import ClientContext, ClientState, Message, derive_seed
from fedmosaic.methods.arrays import load_arrays, to_array, to_tensor
from fedmosaic.methods.vertical.fedhssl.params import FedHSSLParams
from fedmosaic.methods.vertical.fedhssl.simsiam import SimSiamParty, local_epoch, spread_targets, top_layers
from fedmosaic.methods.vertical.optimizer_state import OPTIMIZER_PREFIX
from fedmosaic.methods.vertical.split.client import SplitClient
from fedmosaic.methods.vertical.tensors import tensor

PRETRAINING = frozenset({"cross", "local", "average"})
ENCODER = "encoder."


class FedHSSLClient(SplitClient):
    """A passive party of FedHSSL (see the module docstring for its messages).

    Parameters
    ----------
    party : int
        The party's index (1..K-1).
    splits : mapping of str to VerticalSplit
        The splits by name; only block ``party`` and its presence are read.
    params : FedHSSLParams
        Hyper-parameters.
    """

    def __init__(self, party: int, splits: Mapping[str, VerticalSplit], params: FedHSSLParams) -> None:
        width = splits["train"].blocks[party].shape[1]
        super().__init__(
            party,
            splits,
            lambda: SimSiamParty(width, params.hidden, params.embedding, params.layers),
            params.optimizer_spec(),
        )
        self._params = params

    @override
    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        action = message.config["action"]
        if action not in PRETRAINING:
            if state.config.get("stage") != "finetune":
                state.arrays = {k: v for k, v in state.arrays.items() if not k.startswith(OPTIMIZER_PREFIX)}
                state.config["stage"] = "finetune"
            return super().handle(message, state, context)
        model, optimizer = self.load(state, context.seed)
        assert isinstance(model, SimSiamParty)
        if "grad.prediction" in message.arrays:
            x, _ = self.features("train", self.pending(state, "rows"))
            _, prediction = model.views(x)
            self.step(
                state,
                model,
                optimizer,
                (prediction * tensor(message.arrays["grad.prediction"])).sum(),
            )
        if action == "cross":
            rows = message.arrays["rows"]
            self.remember(state, rows=rows)
            with torch.no_grad():
                projection, prediction = model.views(self.features("train", rows)[0])
            return Message(
                arrays={"projection": to_array(projection), "prediction": to_array(prediction)}, kind=message.kind
            )
        if action == "average":
            load_arrays(model, dict(message.arrays), strict=False)
            self.save(state, model, optimizer)
            return Message(kind=message.kind)
        return self._local(message, state, context, model, optimizer)

    def exported_part(self, state: ClientState) -> dict[str, np.ndarray] | None:
        """The encoder fine-tuning tests (the projector and predictor of pre-training stay with the party)."""
        part = super().exported_part(state)
        return None if part is None else {k[len(ENCODER) :]: v for k, v in part.items() if k.startswith(ENCODER)}

    def _local(
        self,
        message: Message,
        state: ClientState,
        context: ClientContext,
        model: SimSiamParty,
        optimizer: torch.optim.Optimizer,
    ) -> Message:
        held = self.held_rows("train")
        aligned = np.array(message.arrays["aligned"])
        local_epoch(
            model,
            optimizer,
            self.features("train", held)[0],
            spread_targets(held, aligned, tensor(message.arrays["target"])),
            to_tensor(np.isin(held, aligned)),
            batch_size=self._params.batch_size,
            noise_std=self._params.noise_std,
            mask_rate=self._params.mask_rate,
            pull=self._params.pull,
            generator=torch.Generator().manual_seed(derive_seed(context.seed, "local-ssl")),
        )
        self.save(state, model, optimizer)
        return Message(arrays=top_layers(model), kind=message.kind)
