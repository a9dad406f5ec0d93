"""FALSE-VFL's passive party: local posterior up, log-likelihoods of received latents up, gradients in.

Actions (``message.config["action"]``):

``posterior``
    Apply the gradients of the previous step if the message carries them
    (``grad.mean``, ``grad.logvar``, ``grad.loglik``), then reply with the
    local posterior ``mean`` and ``logvar`` of the requested ``rows`` the
    party holds (in the order of ``rows``).
``loglik``
    Reply with ``loglik`` = the party's term of ``log p(x_obs, m | h)`` for
    each received sample ``h`` ``(kappa, len(rows), latent)``; with
    ``jacobian`` also ``dloglik_dh``, its gradient in ``h``, and remember
    ``rows`` and ``h`` for the coming gradients.
``update``
    Apply the gradients of the previous step; reply with nothing.
"""

from __future__ import annotations

import torch
from typing_extensions import override

from fedmosaic.federation import ClientContext, ClientState, Message
from fedmosaic.methods.arrays import to_array, to_tensor
from fedmosaic.methods.vertical.networks import PartyModel
from fedmosaic.methods.vertical.party_client import PartyClient
from fedmosaic.methods.vertical.tensors import tensor


class FalseVFLClient(PartyClient):
    """A passive party of FALSE-VFL (see the module docstring for its messages)."""

    @override
    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        model, optimizer = self.load(state, context.seed)
        assert isinstance(model, PartyModel)
        action = message.config["action"]
        if "grad.loglik" in message.arrays:
            self._apply(message, state, model, optimizer)
        if action == "update":
            return Message(kind=message.kind)
        split, rows = str(message.config["split"]), message.arrays["rows"]
        x, present = self.features(split, rows)
        if action == "posterior":
            with torch.no_grad():
                mean, logvar = model.encoder(x[present])
            return Message(arrays={"mean": to_array(mean), "logvar": to_array(logvar)}, kind=message.kind)
        h = tensor(message.arrays["h"]).requires_grad_(bool(message.config["jacobian"]))
        loglik = model.log_likelihood(x, present, h)
        arrays = {"loglik": to_array(loglik)}
        if message.config["jacobian"]:
            (gradient,) = torch.autograd.grad(loglik.sum(), h)
            arrays["dloglik_dh"] = to_array(gradient)
            self.remember(state, rows=rows, h=message.arrays["h"])
        return Message(arrays=arrays, kind=message.kind)

    def _apply(self, message: Message, state: ClientState, model: PartyModel, optimizer: torch.optim.Optimizer) -> None:
        rows = self.pending(state, "rows")
        x, present = self.features("train", rows)
        mean, logvar = model.encoder(x[present])
        loglik = model.log_likelihood(x, present, to_tensor(self.pending(state, "h")))
        grads = {name: tensor(message.arrays[f"grad.{name}"]) for name in ("mean", "logvar", "loglik")}
        surrogate = (mean * grads["mean"]).sum() + (logvar * grads["logvar"]).sum() + (loglik * grads["loglik"]).sum()
        self.step(state, model, optimizer, surrogate)
