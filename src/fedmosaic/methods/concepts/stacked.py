"""Several F-CMs clients trained together: their models stacked along a leading client dimension.

A round's clients run the same concept model (one graph) on different data. Training them one
after another pays each small operation's overhead once per client and step; here each step is
one :func:`torch.func.vmap` of the loss over the clients' stacked parameters
(:func:`torch.func.functional_call`), one backward pass and one Adam update over every client's
parameters at once, so the overhead is paid once per step of the round.

Each client's result is what training it alone gives, up to float rounding:

- its batches and intervention draws come from its own generator, in the order training alone
  draws them (:func:`~fedmosaic.methods.training.batch_indices`,
  :meth:`~fedmosaic.methods.concepts.objective.Objective.interventions`), drawn beforehand;
- a batch shorter than the step's longest is padded with rows that label nothing (their cross-
  entropies do not count), and a client whose batches are done stops stepping;
- its loss weights its own labeled nodes (:meth:`~fedmosaic.methods.concepts.objective.Objective.weighted`);
- the stacked Adam is :class:`torch.optim.Adam`'s update, with each client's own step count per
  parameter, and leaves a parameter the client does not train (``requires_grad`` off: module-wise
  aggregation) and everything of a client that has stopped exactly as it was, moments included;
- a kept optimizer state is read from and written to each client's state by
  :mod:`~fedmosaic.methods.kept_optimizer`, through a :class:`torch.optim.Adam` per client.

DP-SGD (Opacus clips each client's per-example gradients) and SGD are trained client by client
(:func:`stackable`).
"""

from __future__ import annotations

import inspect
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from fedmosaic.methods.concepts.models import ConceptModel
from fedmosaic.methods.concepts.objective import Objective
from fedmosaic.methods.kept_optimizer import keep_optimizer, restore_optimizer
from fedmosaic.methods.train_params import TrainParams
from fedmosaic.methods.training import batch_indices, make_optimizer

ADAM_DEFAULTS = inspect.signature(torch.optim.Adam).parameters
"""The defaults of the :class:`torch.optim.Adam` that :func:`~fedmosaic.methods.training.make_optimizer` builds (betas, eps)."""


@dataclass(frozen=True)
class LocalFit:
    """One client's training job: its received model, objective, data and randomness.

    Parameters
    ----------
    model : ConceptModel
        The received model; the parameters the client trains have ``requires_grad`` set.
    objective : Objective
        The client's loss.
    x : Tensor of shape (n, input_dim)
    values : integer Tensor of shape (n, len(graph.nodes))
        The client's labels, -1 where unknown.
    generator : torch.Generator
        The client's randomness for this round.
    kept : mutable mapping of str to ndarray or None
        The client's state arrays where it keeps its optimizer state, else None.
    uploaded : tuple of str or None
        Prefixes of the parameters it uploads (module-wise aggregation); None: all.
    validation : dict of str to float
        Validation losses of the received model.
    """

    model: ConceptModel
    objective: Objective
    x: Tensor
    values: Tensor
    generator: torch.Generator
    kept: MutableMapping[str, np.ndarray] | None
    uploaded: tuple[str, ...] | None
    validation: dict[str, float]


def stackable(params: TrainParams) -> bool:
    """Whether clients training with ``params`` can be trained together: Adam without DP-SGD."""
    return params.optimizer == "adam" and params.dp_noise_multiplier == 0


def train_stacked(fits: Sequence[LocalFit], params: TrainParams) -> list[float]:
    """Train every client of ``fits`` in place, together; each one's mean training loss.

    The models must have the same parameters (names and shapes), as models of one graph do.

    Parameters
    ----------
    fits : sequence of LocalFit
        The clients' jobs.
    params : TrainParams
        Epochs, batch size and Adam's settings (:func:`stackable`).

    Returns
    -------
    list of float
        Each client's mean loss over the rows it has seen, as
        :func:`~fedmosaic.methods.training.train_epochs` returns it.
    """
    for fit in fits:
        fit.model.check_values(fit.values)
        fit.model.train()
    batches = [_draws(fit, params) for fit in fits]
    names = [name for name, _ in fits[0].model.named_parameters()]
    stacked = _StackedParameters(fits, names)
    adam = _StackedAdam(stacked, fits, params)
    losses = _Losses(fits[0].model)
    nodes = _node_order(fits[0])
    weights = torch.stack([fit.objective.node_weights(nodes) for fit in fits])
    device = fits[0].x.device
    total = torch.zeros(len(fits), device=device)
    seen = torch.zeros(len(fits), device=device)
    for step in range(max(len(b) for b in batches)):
        x, values, intervene, rows = _padded_step(fits, batches, step)
        sums, counts = torch.func.vmap(lambda p, xb, vb, ib: torch.func.functional_call(losses, p, (xb, vb, ib)))(
            stacked.views(), x, values, intervene
        )
        loss = fits[0].objective.weighted(losses.nodes, sums, counts, weights)
        stacked.flat.grad = None
        loss.sum().backward()
        assert stacked.flat.grad is not None  # every client's parameters take part in its loss
        adam.step(stacked.flat.grad, rows > 0)
        total += loss.detach() * rows
        seen += rows
    stacked.write_back()
    adam.write_back()
    return [float(t) / max(float(s), 1) for t, s in zip(total, seen, strict=True)]


def _node_order(fit: LocalFit) -> tuple[str, ...]:
    """The order of the nodes in the model's cross-entropies (from one row, without gradients)."""
    with torch.no_grad():
        nodes, _, _ = fit.model.cross_entropies(fit.x[:1], fit.values[:1], check=False)
    return nodes


def _draws(fit: LocalFit, params: TrainParams) -> list[tuple[Tensor, Tensor]]:
    """Each batch's rows and interventions, drawn from the client's generator as training alone draws them."""
    return [
        (index, fit.objective.interventions(fit.values[index], fit.generator))
        for index in batch_indices(len(fit.x), params, fit.generator, fit.x.device)
    ]


def _padded_step(
    fits: Sequence[LocalFit], batches: Sequence[Sequence[tuple[Tensor, Tensor]]], step: int
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The clients' batches of ``step`` stacked, padded with unlabeled rows; and each one's number of real rows."""
    rows = [len(b[step][0]) if step < len(b) else 0 for b in batches]
    width = max(rows)
    xs, values, intervene = [], [], []
    for fit, client_batches, n in zip(fits, batches, rows, strict=True):
        index, mask = client_batches[step] if n else (fit.x.new_zeros(0, dtype=torch.long), None)
        pad = width - n
        xs.append(torch.cat([fit.x[index], fit.x.new_zeros(pad, fit.x.shape[1])]))
        values.append(torch.cat([fit.values[index], fit.values.new_full((pad, fit.values.shape[1]), -1)]))
        mask = fit.values.new_zeros((0, fit.values.shape[1]), dtype=torch.bool) if mask is None else mask
        intervene.append(torch.cat([mask, mask.new_zeros(pad, mask.shape[1])]))
    device = fits[0].x.device
    return torch.stack(xs), torch.stack(values), torch.stack(intervene), torch.tensor(rows, device=device)


class _Losses(nn.Module):
    """A concept model's per-node summed cross-entropies and label counts as a module's forward (for ``functional_call``)."""

    def __init__(self, model: ConceptModel) -> None:
        super().__init__()
        self.model = model
        self.nodes: tuple[str, ...] = ()

    def forward(self, x: Tensor, values: Tensor, intervene: Tensor) -> tuple[Tensor, Tensor]:
        self.nodes, sums, counts = self.model.cross_entropies(x, values, intervene=intervene, check=False)
        return sums, counts


class _StackedParameters:
    """The clients' parameters as rows of one ``(clients, elements)`` leaf tensor, and views of it by name."""

    def __init__(self, fits: Sequence[LocalFit], names: Sequence[str]) -> None:
        self.models = [fit.model for fit in fits]
        first = dict(self.models[0].named_parameters())
        self.names = list(names)
        self.shapes = [first[name].shape for name in names]
        self.sizes = [first[name].numel() for name in names]
        rows, trainable = [], []
        for model in self.models:
            own = dict(model.named_parameters())
            if [tuple(own[n].shape) for n in names] != [tuple(s) for s in self.shapes]:
                raise ValueError("clients trained together need models of the same parameters")
            rows.append(torch.cat([own[name].detach().reshape(-1) for name in names]))
            trainable.append([own[name].requires_grad for name in names])
        self.flat = torch.stack(rows).requires_grad_()
        self.trainable = torch.tensor(trainable, device=self.flat.device)

    def views(self) -> dict[str, Tensor]:
        """Each parameter of every client, ``(clients, *shape)``, named as :class:`_Losses` names it."""
        columns = self.flat.split(self.sizes, dim=1)
        return {
            f"model.{name}": column.view(len(self.models), *shape)
            for name, shape, column in zip(self.names, self.shapes, columns, strict=True)
        }

    def write_back(self) -> None:
        """Copy each client's trained row into its model's parameters."""
        with torch.no_grad():
            for model, row in zip(self.models, self.flat, strict=True):
                own = dict(model.named_parameters())
                for name, values in zip(self.names, row.split(self.sizes), strict=True):
                    own[name].copy_(values.view_as(own[name]))


class _StackedAdam:
    """:class:`torch.optim.Adam` over :class:`_StackedParameters`, with each client's own step counts.

    A (client, parameter) is stepped only where the client trains the parameter and still has a batch;
    elsewhere the parameter, its moments and its step count stay as they were.
    """

    def __init__(self, stacked: _StackedParameters, fits: Sequence[LocalFit], params: TrainParams) -> None:
        self.stacked = stacked
        self.lr, self.weight_decay = params.lr, params.weight_decay
        # A torch.optim.Adam only for the clients that keep their optimizer state: it reads and writes it.
        self.optimizers = [
            (c, kept, make_optimizer(fit.model, params)) for c, fit in enumerate(fits) if (kept := fit.kept) is not None
        ]
        self.beta1, self.beta2 = ADAM_DEFAULTS["betas"].default
        self.eps = ADAM_DEFAULTS["eps"].default
        flat = stacked.flat
        self.exp_avg = torch.zeros_like(flat, requires_grad=False)
        self.exp_avg_sq = torch.zeros_like(flat, requires_grad=False)
        self.steps = torch.zeros(flat.shape[0], len(stacked.names), dtype=torch.float64, device=flat.device)
        self.owner = torch.repeat_interleave(
            torch.arange(len(stacked.sizes), device=flat.device), torch.tensor(stacked.sizes, device=flat.device)
        )
        self.fits = fits
        for c, kept, optimizer in self.optimizers:
            fit = fits[c]
            restore_optimizer(optimizer, fit.model, kept)
            for p, parameter in enumerate(self._parameters(fit.model)):
                state = optimizer.state.get(parameter)
                if state:
                    self.exp_avg[c, self._columns(p)] = state["exp_avg"].reshape(-1)
                    self.exp_avg_sq[c, self._columns(p)] = state["exp_avg_sq"].reshape(-1)
                    self.steps[c, p] = float(state["step"])

    def step(self, grad: Tensor, active: Tensor) -> None:
        """One Adam step of the clients marked ``active`` (clients,) from the stacked gradient."""
        stepping = self.stacked.trainable & active.unsqueeze(1)
        self.steps += stepping
        where = stepping.index_select(1, self.owner)
        steps = self.steps.clamp(min=1)
        step_size = (self.lr / (1 - self.beta1**steps)).to(grad.dtype).index_select(1, self.owner)
        correction = ((1 - self.beta2**steps) ** 0.5).to(grad.dtype).index_select(1, self.owner)
        with torch.no_grad():
            parameters = self.stacked.flat
            if self.weight_decay != 0:
                grad = grad.add(parameters, alpha=self.weight_decay)
            exp_avg = self.exp_avg.lerp(grad, 1 - self.beta1)
            exp_avg_sq = self.exp_avg_sq.mul(self.beta2).addcmul_(grad, grad, value=1 - self.beta2)
            denom = (exp_avg_sq.sqrt() / correction).add_(self.eps)
            updated = parameters - step_size * exp_avg / denom
            self.exp_avg = torch.where(where, exp_avg, self.exp_avg)
            self.exp_avg_sq = torch.where(where, exp_avg_sq, self.exp_avg_sq)
            parameters.copy_(torch.where(where, updated, parameters))

    def write_back(self) -> None:
        """Write each client's moments into its kept optimizer state (where it keeps one)."""
        for c, kept, optimizer in self.optimizers:
            fit = self.fits[c]
            for p, parameter in enumerate(self._parameters(fit.model)):
                if parameter.requires_grad and self.steps[c, p] > 0:
                    optimizer.state[parameter] = {
                        "step": torch.tensor(float(self.steps[c, p]), dtype=torch.float32),
                        "exp_avg": self.exp_avg[c, self._columns(p)].view_as(parameter).clone(),
                        "exp_avg_sq": self.exp_avg_sq[c, self._columns(p)].view_as(parameter).clone(),
                    }
            keep_optimizer(optimizer, fit.model, kept)

    def _parameters(self, model: ConceptModel) -> list[nn.Parameter]:
        own = dict(model.named_parameters())
        return [own[name] for name in self.stacked.names]

    def _columns(self, p: int) -> slice:
        start = sum(self.stacked.sizes[:p])
        return slice(start, start + self.stacked.sizes[p])
