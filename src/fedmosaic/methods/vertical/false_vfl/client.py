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

Parties held in one process handle an exchange together
(:meth:`FalseVFLClient.handle_many`): their networks, unless a party's
encoder is the user's own, run stacked
(:mod:`fedmosaic.methods.vertical.false_vfl.stacked`), with the same replies and
states as one party after another, up to float rounding. They also keep a
training step's graph from its two exchanges until its gradients arrive
(:class:`_Step`), so the update is one backward pass instead of a second
forward pass and a backward pass; a party handled alone (on Flower) computes
the forward pass again from the rows and samples it remembered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor
from typing_extensions import override

from fedmosaic.federation import ClientContext, ClientJob, ClientState, Message
from fedmosaic.methods.arrays import to_array, to_tensor
from fedmosaic.methods.vertical.false_vfl.stacked import StackedParties, pad_to
from fedmosaic.methods.vertical.networks import PartyModel
from fedmosaic.methods.vertical.party_client import PartyClient
from fedmosaic.methods.vertical.tensors import spread, tensor

STACKED_ROWS = 2**21
"""Most latent rows (parties x samples x rows) one stacked log-likelihood exchange evaluates.

A larger one is handled one party at a time, whose peak memory is one
party's share. The server sends importance sampling's exchanges in blocks of
at most :data:`~fedmosaic.methods.vertical.false_vfl.prediction.LATENT_ROWS`
latent rows, so this happens only with many parties.
"""


class FalseVFLClient(PartyClient):
    """A passive party of FALSE-VFL (see the module docstring for its messages)."""

    _step: _Step | None = None
    """The training step whose graph the party's networks keep, shared by the parties stacked with it."""

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

    @override
    def batch_key(self, message: Message) -> tuple[str, str, bool]:
        """Messages of one exchange (action, split and whether a Jacobian is asked) are handled together."""
        config = message.config
        return str(config["action"]), str(config.get("split", "")), bool(config.get("jacobian", False))

    @classmethod
    @override
    def handle_many(cls, jobs: Sequence[ClientJob]) -> list[Message]:
        """The parties' replies to one exchange, their networks evaluated stacked."""
        parties = [_Party.of(job) for job in jobs]
        if _stacked_rows(jobs) > STACKED_ROWS or not StackedParties.takes([party.model for party in parties]):
            return super().handle_many(jobs)
        action = jobs[0].message.config["action"]
        updating = [party for party in parties if "grad.loglik" in party.job.message.arrays]
        if updating:
            _apply_together(updating)
        if action == "update":
            return [Message(kind=job.message.kind) for job in jobs]
        split = str(jobs[0].message.config["split"])
        features = [party.logic.features(split, party.job.message.arrays["rows"]) for party in parties]
        stacked = StackedParties([party.model for party in parties])
        x, present = _stack_features(features, stacked.width)
        if action == "posterior":
            training = split == "train"
            with torch.set_grad_enabled(training):
                means, logvars = stacked.encode(x)
            held = [
                (mean[: len(p)][p], logvar[: len(p)][p])
                for mean, logvar, (_, p) in zip(means, logvars, features, strict=True)
            ]
            if training:
                _Step.begin(parties, held)
            else:
                _Step.end(parties)
            return [
                Message(
                    arrays={"mean": to_array(mean.detach()), "logvar": to_array(logvar.detach())}, kind=job.message.kind
                )
                for job, (mean, logvar) in zip(jobs, held, strict=True)
            ]
        jacobian = bool(jobs[0].message.config["jacobian"])
        received = [tensor(job.message.arrays["h"]) for job in jobs]
        h = torch.stack([pad_to(part, (part.shape[0], x.shape[1], part.shape[2])) for part in received])
        step = _Step.of(parties) if jacobian else None
        with torch.set_grad_enabled(jacobian):
            h.requires_grad_(jacobian)
            loglik = stacked.log_likelihood(x, present, h)
            gradients = torch.autograd.grad(loglik.sum(), h, retain_graph=step is not None)[0] if jacobian else None
        replies = []
        for k, (job, part) in enumerate(zip(jobs, received, strict=True)):
            arrays = {"loglik": to_array(loglik[k, :, : part.shape[1]].detach())}
            if gradients is not None:
                arrays["dloglik_dh"] = to_array(gradients[k, :, : part.shape[1]])
                parties[k].logic.remember(job.state, rows=job.message.arrays["rows"], h=job.message.arrays["h"])
            replies.append(Message(arrays=arrays, kind=job.message.kind))
        if step is not None:
            step.complete(parties, [loglik[k, :, : part.shape[1]] for k, part in enumerate(received)])
        else:
            _Step.end(parties)
        return replies


class _Party:
    """One job of :meth:`FalseVFLClient.handle_many` with the party's loaded model and optimizer."""

    def __init__(self, job: ClientJob, logic: FalseVFLClient, model: PartyModel, optimizer: torch.optim.Optimizer):
        self.job, self.logic, self.model, self.optimizer = job, logic, model, optimizer

    @classmethod
    def of(cls, job: ClientJob) -> _Party:
        logic = job.logic
        assert isinstance(logic, FalseVFLClient)  # handle_many is called on the class of every job's logic
        model, optimizer = logic.load(job.state, job.context.seed)
        assert isinstance(model, PartyModel)
        return cls(job, logic, model, optimizer)


def _stacked_rows(jobs: Sequence[ClientJob]) -> int:
    """The latent rows a stacked log-likelihood of ``jobs`` would evaluate (0 for other messages)."""
    shapes = [job.message.arrays["h"].shape for job in jobs if "h" in job.message.arrays]
    return len(jobs) * max(samples for samples, _, _ in shapes) * max(rows for _, rows, _ in shapes) if shapes else 0


def _stack_features(features: Sequence[tuple[Tensor, Tensor]], width: int) -> tuple[Tensor, Tensor]:
    """The parties' ``(n_k, w_k)`` features and ``(n_k,)`` presence as ``(K, n, width)`` and ``(K, n)`` (zeros, absent)."""
    rows = max(len(present) for _, present in features)
    x = torch.stack([pad_to(block, (rows, width)) for block, _ in features])
    present = torch.stack([pad_to(p, (rows,)) for _, p in features])
    return x, present


def _apply_together(parties: Sequence[_Party]) -> None:
    """Each party's step on the gradients its message carries (:meth:`FalseVFLClient._apply`), in one backward pass.

    The graph kept since the step's exchanges serves where it is whole for
    exactly these parties (:class:`_Step`); otherwise the forward pass is
    computed again from the rows and samples each party remembered.
    """
    step = _Step.of(parties)
    if step is not None and step.holds(parties):
        surrogate = step.surrogate([party.job.message.arrays for party in parties])
    else:
        surrogate = _recomputed_surrogate(parties)
    _Step.end(parties)
    for party in parties:
        party.optimizer.zero_grad()
    surrogate.backward()
    for party in parties:
        party.optimizer.step()
        party.logic.save(party.job.state, party.model, party.optimizer)


def _recomputed_surrogate(parties: Sequence[_Party]) -> Tensor:
    """The parties' surrogate loss (received gradients times outputs) from a new forward pass."""
    features = [party.logic.features("train", party.logic.pending(party.job.state, "rows")) for party in parties]
    stacked = StackedParties([party.model for party in parties])
    x, present = _stack_features(features, stacked.width)
    pending = [to_tensor(party.logic.pending(party.job.state, "h")) for party in parties]
    h = torch.stack([pad_to(part, (part.shape[0], x.shape[1], part.shape[2])) for part in pending])
    mean, logvar = stacked.encode(x)
    loglik = stacked.log_likelihood(x, present, h)
    surrogate = mean.new_zeros(())
    for k, (party, (_, held)) in enumerate(zip(parties, features, strict=True)):
        arrays = party.job.message.arrays
        rows = len(held)
        surrogate = surrogate + (mean[k, :rows] * spread(tensor(arrays["grad.mean"]), held)).sum()
        surrogate = surrogate + (logvar[k, :rows] * spread(tensor(arrays["grad.logvar"]), held)).sum()
        surrogate = surrogate + (loglik[k, :, :rows] * tensor(arrays["grad.loglik"])).sum()
    return surrogate


@dataclass
class _Step:
    """One training step's stacked graph, from its posterior exchange to the message carrying its gradients.

    ``mean`` and ``logvar`` are each party's posterior of the rows it holds,
    ``loglik`` its log-likelihoods of the received samples (set by the
    Jacobian exchange), all with their graph to the parties' parameters.
    The graph serves the update only if the same parties, in the same order,
    still hold the parameters it was recorded on (same memory, no in-place
    change since) and the samples they remembered.
    """

    logics: list[FalseVFLClient]
    mean: list[Tensor]
    logvar: list[Tensor]
    parameters: list[tuple[tuple[int, int], ...]]
    loglik: list[Tensor] | None = None
    remembered: list[np.ndarray] | None = None

    @classmethod
    def begin(cls, parties: Sequence[_Party], held: Sequence[tuple[Tensor, Tensor]]) -> None:
        """Keep the posterior exchange's graph on every party of it."""
        step = cls(
            [party.logic for party in parties],
            [mean for mean, _ in held],
            [logvar for _, logvar in held],
            [_parameters(party) for party in parties],
        )
        for party in parties:
            party.logic._step = step

    @classmethod
    def of(cls, parties: Sequence[_Party]) -> _Step | None:
        """The step every one of ``parties`` keeps, if they keep one and the same, in this order."""
        step = parties[0].logic._step
        if step is None or step.logics != [party.logic for party in parties]:
            return None
        return step

    @staticmethod
    def end(parties: Sequence[_Party]) -> None:
        """Drop the parties' kept graph."""
        for party in parties:
            party.logic._step = None

    def complete(self, parties: Sequence[_Party], loglik: list[Tensor]) -> None:
        """Add the Jacobian exchange's log-likelihoods and the samples the parties remembered."""
        if self.loglik is not None or not self.unchanged(parties):
            _Step.end(parties)
            return
        self.loglik = loglik
        self.remembered = [party.logic.pending(party.job.state, "h") for party in parties]

    def unchanged(self, parties: Sequence[_Party]) -> bool:
        """Whether ``parties`` still hold the parameters the graph was recorded on."""
        return all(_parameters(party) == kept for party, kept in zip(parties, self.parameters, strict=True))

    def holds(self, parties: Sequence[_Party]) -> bool:
        """Whether the step is complete and its graph still that of ``parties``' parameters and samples."""
        return (
            self.remembered is not None
            and self.unchanged(parties)
            and all(
                party.logic.pending(party.job.state, "h") is kept
                for party, kept in zip(parties, self.remembered, strict=True)
            )
        )

    def surrogate(self, gradients: Sequence[dict[str, np.ndarray]]) -> Tensor:
        """Sum over parties of the received gradients times the kept outputs."""
        assert self.loglik is not None  # only a completed step serves an update
        total = self.mean[0].new_zeros(())
        for mean, logvar, loglik, arrays in zip(self.mean, self.logvar, self.loglik, gradients, strict=True):
            total = total + (mean * tensor(arrays["grad.mean"])).sum() + (logvar * tensor(arrays["grad.logvar"])).sum()
            total = total + (loglik * tensor(arrays["grad.loglik"])).sum()
        return total


def _parameters(party: _Party) -> tuple[tuple[int, int], ...]:
    """Where each of the party's parameters lives and how often it was changed in place.

    The parameters are read from the optimizer's list of them (walking the
    model's modules on every message costs more).
    """
    return tuple((p.data_ptr(), p._version) for group in party.optimizer.param_groups for p in group["params"])
