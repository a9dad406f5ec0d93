"""The passive party of the split-network baselines: embeddings up, their gradients in.

Actions (``message.config["action"]``):

``embed``
    Apply the previous step's ``grad.embedding`` if the message carries it,
    then reply with ``embedding`` of the requested ``rows``: only the rows the
    party holds, or, with ``zero_fill``, every row with zeros for the block
    of the rows it does not hold (Vanilla VFL at test time). With ``train``
    the rows are remembered for the coming gradient.
    With ``best`` the model kept by ``keep`` embeds (the round selected on validation).
``update``
    Apply the previous step's gradient; reply with nothing.
``keep``
    Keep the current model as the one selected on validation; reply with nothing.
"""

from __future__ import annotations

import numpy as np
import torch
from typing_extensions import override

from fedmosaic.federation import ClientContext, ClientState, Message
from fedmosaic.methods.arrays import to_array
from fedmosaic.methods.vertical.party_client import PartyClient
from fedmosaic.methods.vertical.tensors import tensor


class SplitClient(PartyClient):
    """A passive party of Vanilla VFL, PlugVFL and LASER-VFL (see the module docstring)."""

    @override
    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        model, optimizer = self.load(state, context.seed)
        if "grad.embedding" in message.arrays:
            x, present = self.features("train", self.pending(state, "rows"))
            gradient = tensor(message.arrays["grad.embedding"])
            self.step(state, model, optimizer, (model(x[present]) * gradient).sum())
        if message.config["action"] == "keep":
            self.keep_best(state)
        if message.config["action"] in ("update", "keep"):
            return Message(kind=message.kind)
        rows = message.arrays["rows"]
        x, present = self.features(str(message.config["split"]), rows)
        if message.config.get("train", False):
            self.remember(state, rows=rows)
        selected = x if message.config.get("zero_fill", False) else x[present]
        embedder = self.load_best(state, context.seed) if message.config.get("best", False) else model
        with torch.no_grad():
            embedding = embedder(selected)
        return Message(arrays={"embedding": to_array(embedding)}, kind=message.kind)

    def exported_part(self, state: ClientState) -> dict[str, np.ndarray] | None:
        """The encoder the run tests: the one kept on validation, else the current one."""
        return self.kept(state) or self.current(state)
