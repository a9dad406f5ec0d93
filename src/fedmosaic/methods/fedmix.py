"""FedMix and NaiveMix (Yoon et al., ICLR 2021): FedAvg with shared mean data.

Every client shares the means of its inputs and of its one-hot labels, once:
by default one mean over its whole dataset, or one per group of
``mean_batch`` samples. The server relays each mean to every other client
once; a client keeps the global means it received in its state and trains on
mixes of its own samples with means drawn at random, one per sample:

- **NaiveMix** trains on ``x~ = (1 - lam) x_i + lam x_bar_j`` with the mixed
  label, i.e. ``(1 - lam) CE(f(x~), y_i) + lam CE(f(x~), y_bar_j)``;
- **FedMix** approximates global mixup to first order in ``lam`` (the
  gradient of global mixup's loss cannot be computed from means alone, but
  its Taylor expansion around ``(1 - lam) x_i`` can)::

      (1 - lam) CE(f((1 - lam) x_i), y_i) + lam CE(f((1 - lam) x_i), y_bar_j)
          + lam (1 - lam) < d CE(f(x), y_i) / dx at x = (1 - lam) x_i , x_bar_j >

  whose last term needs a double backward.

Protocol, piggybacked on FedAvg's rounds (no extra trip): a train message
asks a client for its means (config ``send_means``) until the server holds
them, and carries the means the client has not received yet (arrays
``global_x``, ``global_y``, config ``means_from``: the contributing client of
each row), never the client's own. The client replies with its trained model
and, when asked, its means (arrays ``mean_x`` of shape ``(m, *input_shape)``
and ``mean_y`` of shape ``(m, num_classes)``). Rounds before any means exist
are plain FedAvg. Receiving is idempotent: a client ignores rows from a
contributor it already holds, so a lost reply (the server then sends the same
rows again) does not duplicate means.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import torch
from pydantic import Field
from torch import Tensor, nn
from torch.nn import functional as F
from typing_extensions import override

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.federation import (
    ArraySpec,
    ClientContext,
    ClientState,
    Message,
    ReplySpec,
    RoundContext,
    derive_rng,
    derive_seed,
    label_means_check,
)
from fedmosaic.federation.message import ConfigValue
from fedmosaic.federation.robust import Contribution
from fedmosaic.limits import BatchSize
from fedmosaic.methods.arrays import to_tensor
from fedmosaic.methods.base import Built, MethodParams
from fedmosaic.methods.fedavg import FedAvgClient, FedAvgServer, ModelFactory
from fedmosaic.methods.probes import Probe
from fedmosaic.methods.task import Pretraining
from fedmosaic.methods.training import LossFn, TrainParams

if TYPE_CHECKING:
    from fedmosaic.methods.task import HorizontalTask

Variant = Literal["fedmix", "naivemix"]

_SHARED = ("global_x", "global_y")
_UPLOADED = ("mean_x", "mean_y")
_PREFIX = "fedmix/"


class FedMixParams(MethodParams):
    """FedMix parameters (and NaiveMix's, with ``variant = "naivemix"``).

    Parameters
    ----------
    variant : {"fedmix", "naivemix"}, default "fedmix"
        ``fedmix``: the first-order approximation of global mixup (double
        backward); ``naivemix``: plain mixup of each sample with a global mean.
    lam : float, default 0.05
        Mixing weight lambda, in (0, 1). The paper uses 0.05 for FedMix and
        0.1 for NaiveMix on CIFAR10, 0.2 on FEMNIST.
    mean_batch : int or None, default None
        Samples per shared mean (M in the paper): a client shares one mean
        per group of at least this many shuffled samples. Unset: one mean of
        the client's whole dataset, as in the paper.

    Examples
    --------
    >>> FedMixParams().variant, FedMixParams().lam
    ('fedmix', 0.05)
    """

    variant: Variant = "fedmix"
    lam: float = Field(default=0.05, gt=0, lt=1)
    mean_batch: BatchSize | None = None


class NaiveMixParams(FedMixParams):
    """NaiveMix parameters: FedMix's, with NaiveMix's defaults.

    Parameters
    ----------
    variant : {"fedmix", "naivemix"}, default "naivemix"
        ``naivemix``: plain mixup of each sample with a global mean;
        ``fedmix``: the first-order approximation of global mixup.
    lam : float, default 0.1
        Mixing weight lambda, in (0, 1); the paper's NaiveMix value on CIFAR10.
    mean_batch : int or None, default None
        Samples per shared mean (M in the paper): a client shares one mean
        per group of at least this many shuffled samples. Unset: one mean of
        the client's whole dataset, as in the paper.

    Examples
    --------
    >>> NaiveMixParams().variant, NaiveMixParams().lam
    ('naivemix', 0.1)
    """

    variant: Variant = "naivemix"
    lam: float = Field(default=0.1, gt=0, lt=1)


def local_means(data: ArrayDataset, mean_batch: int | None, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Means of a client's inputs and one-hot labels, over groups of samples.

    Parameters
    ----------
    data : ArrayDataset
        The client's data (not empty).
    mean_batch : int or None
        Smallest group size. The shuffled samples are cut into
        ``len(data) // mean_batch`` groups of as equal sizes as possible, so
        every sample counts and every mean covers at least ``mean_batch``
        samples. None, or more than the client has: one mean of all samples.
    rng : numpy.random.Generator
        Shuffles the samples before grouping.

    Returns
    -------
    mean_x : numpy.ndarray
        float32, shape ``(m, *input_shape)``.
    mean_y : numpy.ndarray
        float32, shape ``(m, num_classes)``; each row sums to 1.

    Examples
    --------
    >>> data = ArrayDataset(np.array([[0.0], [2.0]], np.float32), np.array([0, 1]), num_classes=2)
    >>> mean_x, mean_y = local_means(data, None, np.random.default_rng(0))
    >>> mean_x.tolist(), mean_y.tolist()
    ([[1.0]], [[0.5, 0.5]])
    """
    groups = 1 if mean_batch is None else max(1, len(data) // mean_batch)
    order = np.arange(len(data)) if groups == 1 else rng.permutation(len(data))
    one_hot = np.eye(data.num_classes, dtype=np.float32)[data.y]
    parts = np.array_split(order, groups)
    mean_x = np.stack([data.x[part].mean(axis=0) for part in parts]).astype(np.float32)
    mean_y = np.stack([one_hot[part].mean(axis=0) for part in parts]).astype(np.float32)
    return mean_x, mean_y


def naivemix_loss(model: nn.Module, x: Tensor, y: Tensor, mean_x: Tensor, mean_y: Tensor, lam: float) -> Tensor:
    """NaiveMix's loss of a batch: mixup of each sample with a global mean.

    ``mean((1 - lam) CE(f(x~), y) + lam CE(f(x~), mean_y))`` with
    ``x~ = (1 - lam) x + lam mean_x``; the second cross-entropy is against
    the soft label ``mean_y``.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier f.
    x, y : torch.Tensor
        A batch of inputs ``(B, ...)`` and integer labels ``(B,)``.
    mean_x, mean_y : torch.Tensor
        The global mean drawn for each sample: ``(B, ...)`` and ``(B, C)``.
    lam : float
        Mixing weight.

    Examples
    --------
    >>> model = nn.Linear(2, 2)
    >>> x, y = torch.ones(3, 2), torch.tensor([0, 1, 1])
    >>> bool(naivemix_loss(model, x, y, torch.zeros(3, 2), torch.full((3, 2), 0.5), 0.1) > 0)
    True
    """
    logits = model((1 - lam) * x + lam * mean_x)
    return (1 - lam) * F.cross_entropy(logits, y) + lam * F.cross_entropy(logits, mean_y)


def fedmix_loss(model: nn.Module, x: Tensor, y: Tensor, mean_x: Tensor, mean_y: Tensor, lam: float) -> Tensor:
    """FedMix's loss of a batch: global mixup to first order in ``lam``.

    With ``s = (1 - lam) x``, the mean over the batch of::

        (1 - lam) CE(f(s), y) + lam CE(f(s), mean_y)
            + lam (1 - lam) < d CE(f(s), y) / d s , mean_x >

    The input gradient is taken with ``create_graph=True`` so that the last
    term is differentiated with respect to the parameters (double backward).
    Each sample's gradient is that of its own loss, which assumes the model
    treats samples independently (no batch normalisation in training mode).

    Parameters
    ----------
    model : torch.nn.Module
        The classifier f.
    x, y : torch.Tensor
        A batch of inputs ``(B, ...)`` and integer labels ``(B,)``.
    mean_x, mean_y : torch.Tensor
        The global mean drawn for each sample: ``(B, ...)`` and ``(B, C)``.
    lam : float
        Mixing weight.

    Examples
    --------
    >>> model = nn.Linear(2, 2)
    >>> x, y = torch.ones(3, 2), torch.tensor([0, 1, 1])
    >>> fedmix_loss(model, x, y, torch.zeros(3, 2), torch.full((3, 2), 0.5), 0.1).requires_grad
    True
    """
    scaled = ((1 - lam) * x).detach().requires_grad_(True)
    logits = model(scaled)
    own = F.cross_entropy(logits, y, reduction="none")
    mixed = F.cross_entropy(logits, mean_y, reduction="none")
    (gradient,) = torch.autograd.grad(own.sum(), scaled, create_graph=True)
    taylor = (gradient * mean_x).flatten(start_dim=1).sum(dim=1)
    return ((1 - lam) * own + lam * mixed + lam * (1 - lam) * taylor).mean()


_LOSSES = {"fedmix": fedmix_loss, "naivemix": naivemix_loss}


@dataclass
class MixingLoss:
    """The loss of one batch, each sample mixed with a global mean drawn at random.

    Parameters
    ----------
    means_x, means_y : torch.Tensor
        The global means the client holds: ``(n, ...)`` and ``(n, C)``.
    lam : float
        Mixing weight.
    variant : {"fedmix", "naivemix"}
        Which loss: :func:`fedmix_loss` or :func:`naivemix_loss`.
    generator : torch.Generator
        Draws the mean of each sample (derive it from the client context).

    Examples
    --------
    >>> loss = MixingLoss(torch.zeros(1, 2), torch.full((1, 2), 0.5), 0.1, "naivemix",
    ...                   torch.Generator().manual_seed(0))
    >>> bool(loss(nn.Linear(2, 2), torch.ones(3, 2), torch.tensor([0, 1, 1])) > 0)
    True
    """

    means_x: Tensor
    means_y: Tensor
    lam: float
    variant: Variant
    generator: torch.Generator

    def __call__(self, model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
        """The loss of a batch mixed with means drawn from the shared ones."""
        drawn = torch.randint(len(self.means_x), (len(x),), generator=self.generator).to(self.means_x.device)
        return _LOSSES[self.variant](model, x, y, self.means_x[drawn], self.means_y[drawn], self.lam)


class FedMixClient(FedAvgClient):
    """FedAvg's client, training with the global means it holds and sharing its own.

    The received means are kept in ``state.arrays`` as ``global_x``,
    ``global_y`` and ``global_from`` (the contributing client of each row).

    Parameters
    ----------
    model_factory : callable () -> torch.nn.Module
        Builds a model of the global architecture.
    data : ArrayDataset
        The client's private data; only its means ever leave the client.
    train : TrainParams
        Local training hyper-parameters.
    params : FedMixParams
        Variant, mixing weight and samples per mean.

    Examples
    --------
    See ``tests/methods/test_fedmix.py`` for clients in a federation.
    """

    def __init__(
        self, model_factory: ModelFactory, data: ArrayDataset, train: TrainParams, params: FedMixParams
    ) -> None:
        super().__init__(model_factory, data, train)
        self._data = data
        self._params = params
        self._mixing: MixingLoss | None = None

    @override
    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        _store_means(message, state)
        self._mixing = self._mixing_loss(state, context)
        model_only = Message(
            arrays={k: v for k, v in message.arrays.items() if k not in _SHARED},
            config=message.config,
            kind=message.kind,
        )
        reply = super().handle(model_only, state, context)
        if message.config.get("send_means"):
            rng = derive_rng(context.seed, "means")
            reply.arrays["mean_x"], reply.arrays["mean_y"] = local_means(self._data, self._params.mean_batch, rng)
        return reply

    def _loss_fn(self) -> LossFn:
        return super()._loss_fn() if self._mixing is None else self._mixing

    def _mixing_loss(self, state: ClientState, context: ClientContext) -> MixingLoss | None:
        if "global_x" not in state.arrays:
            return None
        return MixingLoss(
            means_x=to_tensor(state.arrays["global_x"]),
            means_y=to_tensor(state.arrays["global_y"]),
            lam=self._params.lam,
            variant=self._params.variant,
            generator=torch.Generator().manual_seed(derive_seed(context.seed, "mix")),
        )


def _store_means(message: Message, state: ClientState) -> None:
    """Append the received rows from contributors the client does not hold yet."""
    if "global_x" not in message.arrays:
        return
    sources = np.asarray(message.config["means_from"], dtype=np.int64)
    new = ~np.isin(sources, state.arrays.get("global_from", np.empty(0, np.int64)))
    received = {"global_x": message.arrays["global_x"], "global_y": message.arrays["global_y"], "global_from": sources}
    for name, rows in received.items():
        held = [state.arrays[name]] if name in state.arrays else []
        state.arrays[name] = np.concatenate([*held, rows[new]])


class MeanRelay:
    """The server's side of mean sharing: collects each client's means, sends each once.

    Contributors are kept in their order of arrival; a client that has
    acknowledged (by replying) the first ``k`` contributors is sent the
    means of the later ones, except its own.

    Examples
    --------
    >>> relay = MeanRelay()
    >>> relay.attach(0, Message()).config
    {'send_means': True}
    """

    def __init__(self) -> None:
        self.means: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.order: list[int] = []
        self.held: dict[int, int] = {}

    def attach(self, client: int, message: Message) -> Message:
        """``message`` plus the means ``client`` lacks and, until it shared them, a request for its own."""
        sources = [c for c in self.order[self.held.get(client, 0) :] if c != client]
        arrays, config = dict(message.arrays), dict(message.config)
        config["send_means"] = client not in self.means
        if sources:
            arrays["global_x"] = np.concatenate([self.means[c][0] for c in sources])
            arrays["global_y"] = np.concatenate([self.means[c][1] for c in sources])
            config["means_from"] = [c for c in sources for _ in range(len(self.means[c][0]))]
        return Message(arrays=arrays, config=config, metrics=dict(message.metrics), kind=message.kind)

    def collect(self, replies: Mapping[int, Message]) -> dict[int, Message]:
        """Record what the repliers now hold, keep new means, and return the replies without them."""
        sent = len(self.order)
        stripped: dict[int, Message] = {}
        for client in sorted(replies):
            reply = replies[client]
            self.held[client] = sent
            if "mean_x" in reply.arrays and client not in self.means:
                self.means[client] = self._checked(client, reply.arrays["mean_x"], reply.arrays["mean_y"])
                self.order.append(client)
            stripped[client] = Message(
                arrays={k: v for k, v in reply.arrays.items() if k not in _UPLOADED},
                config=reply.config,
                metrics=reply.metrics,
                kind=reply.kind,
            )
        return stripped

    def _checked(self, client: int, mean_x: np.ndarray, mean_y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Copies of a client's means, once their shapes agree with each other and with earlier means."""
        like = next(iter(self.means.values()), (mean_x, mean_y))
        if (
            mean_y.ndim != 2
            or not 1 <= len(mean_x) == len(mean_y)
            or mean_x.shape[1:] != like[0].shape[1:]
            or mean_y.shape[1:] != like[1].shape[1:]
        ):
            raise ValueError(
                f"client {client}: means of shapes {mean_x.shape} and {mean_y.shape} do not match "
                f"(m, {', '.join(map(str, like[0].shape[1:]))}) and (m, {like[1].shape[1]})"
            )
        return np.array(mean_x), np.array(mean_y)

    def state_dict(self) -> ClientState:
        """The collected means and who holds which, as named arrays and config."""
        arrays: dict[str, np.ndarray] = {}
        for client, (mean_x, mean_y) in self.means.items():
            arrays[f"{_PREFIX}mean_x/{client}"] = mean_x
            arrays[f"{_PREFIX}mean_y/{client}"] = mean_y
        config: dict[str, ConfigValue] = {
            f"{_PREFIX}order": json.dumps(self.order),
            f"{_PREFIX}held": json.dumps(self.held),
        }
        return ClientState(arrays=arrays, config=config)

    def load_state_dict(self, state: ClientState) -> None:
        """Restore what :meth:`state_dict` saved (other entries of ``state`` are ignored)."""
        self.order = [int(c) for c in json.loads(str(state.config[f"{_PREFIX}order"]))]
        self.held = {int(c): int(k) for c, k in json.loads(str(state.config[f"{_PREFIX}held"])).items()}
        self.means = {
            c: (state.arrays[f"{_PREFIX}mean_x/{c}"], state.arrays[f"{_PREFIX}mean_y/{c}"]) for c in self.order
        }


class _SharingRound(RoundContext):
    """The round as FedAvg's server sees it, with mean sharing piggybacked on each exchange.

    Messages go through ``outer`` with the means each client lacks attached;
    replies come back with the uploaded means taken out (and kept by the
    relay). Bytes, trips and repliers are counted by ``outer``, the
    federation's round, and the model upload is combined by ``outer``'s
    rule or secure aggregation: the model is masked, the means travel in
    the clear.
    """

    def __init__(
        self, outer: RoundContext, relay: MeanRelay, means: Mapping[str, ArraySpec], max_means: Callable[[float], int]
    ) -> None:
        super().__init__(
            round=outer.round,
            clients=outer.clients,
            seed=outer.seed,
            grid=outer.grid,
            failing=outer.failing,
            min_replies=outer.min_replies,
            limits=outer.limits,
        )
        self._outer = outer
        self._relay = relay
        self._means = dict(means)
        self._check = label_means_check(*_UPLOADED, max_means)

    @override
    def exchange(
        self,
        messages: Mapping[int, Message],
        *,
        quorum: bool = True,
        expect: ReplySpec | Mapping[int, ReplySpec] | None = None,
    ) -> dict[int, Message]:
        """The outer round's exchange, with the means attached and every spec extended by the uploaded means."""
        replies = self._outer.exchange(self._attached(messages), quorum=quorum, expect=self._extended(expect))
        return self._relay.collect(replies)

    @override
    def exchange_aggregated(
        self,
        messages: Mapping[int, Message],
        *,
        expect: ReplySpec | Mapping[int, ReplySpec],
        reference: Mapping[str, np.ndarray],
        summed: Mapping[str, np.ndarray] | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[int, Message]]:
        """The outer round's combined upload, with the means attached and taken out of the replies as in :meth:`exchange`."""
        combined, replies = self._outer.exchange_aggregated(
            self._attached(messages), expect=self._extended(expect), reference=reference, summed=summed
        )
        return combined, self._relay.collect(replies)

    def _attached(self, messages: Mapping[int, Message]) -> dict[int, Message]:
        return {client: self._relay.attach(client, m) for client, m in messages.items()}

    def _extended(self, expect: ReplySpec | Mapping[int, ReplySpec] | None) -> ReplySpec | dict[int, ReplySpec]:
        if isinstance(expect, Mapping):
            return {client: self._extended_one(one) for client, one in expect.items()}
        return self._extended_one(expect or ReplySpec(open=True))

    def _extended_one(self, spec: ReplySpec) -> ReplySpec:
        return spec.extended(optional_arrays=self._means, checks=(self._check,))

    @override
    def aggregate(
        self, contributions: Sequence[Contribution], reference: Mapping[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """The federation's rule, applied by the outer round."""
        return self._outer.aggregate(contributions, reference)


class FedMixServer(FedAvgServer):
    """FedAvg's server, relaying each client's means to every other client once.

    The same server serves FedMix and NaiveMix: the variants differ only in
    the clients' loss.

    Parameters
    ----------
    model_factory : callable () -> torch.nn.Module
        Builds the (untrained) global model.
    test : ArrayDataset
        The global test set the server evaluates on.
    pretraining : Pretraining or None, default None
        Train the initial model centrally first.
    mean_batch : int or None, default None
        The clients' ``mean_batch``: a reply may hold at most
        ``max(1, num_examples // mean_batch)`` means (one without it).
    probes : sequence of Probe, default ()
        Further measurements added to every evaluation.

    Examples
    --------
    See ``tests/methods/test_fedmix.py`` for complete small runs.
    """

    def __init__(
        self,
        model_factory: ModelFactory,
        test: ArrayDataset,
        pretraining: Pretraining | None = None,
        mean_batch: int | None = None,
        probes: Sequence[Probe] = (),
    ) -> None:
        super().__init__(model_factory, test, pretraining, probes)
        self._mean_batch = mean_batch
        self.relay = MeanRelay()

    @override
    def initialize(self, seed: int) -> None:
        super().initialize(seed)
        self.relay = MeanRelay()

    @override
    def run_round(self, ctx: RoundContext) -> dict[str, float]:
        sharing = _SharingRound(ctx, self.relay, self.mean_specs(*_UPLOADED), self._max_means)
        return super().run_round(sharing)

    def _max_means(self, examples: float) -> int:
        return 1 if self._mean_batch is None else max(1, int(examples) // self._mean_batch)

    @override
    def state_dict(self) -> ClientState:
        state = super().state_dict()
        shared = self.relay.state_dict()
        return ClientState(arrays={**state.arrays, **shared.arrays}, config={**state.config, **shared.config})

    @override
    def load_state_dict(self, state: ClientState) -> None:
        model = {k: v for k, v in state.arrays.items() if not k.startswith(_PREFIX)}
        config = {k: v for k, v in state.config.items() if not k.startswith(_PREFIX)}
        super().load_state_dict(ClientState(arrays=model, config=config))
        self.relay.load_state_dict(state)


def build_fedmix(task: HorizontalTask, params: FedMixParams) -> Built:
    """FedMix's (or NaiveMix's) server and client factory for a classification task.

    Parameters
    ----------
    task : HorizontalTask
        Clients' data, test set, model and training hyper-parameters.
    params : FedMixParams
        The method's parameters (:class:`NaiveMixParams` for NaiveMix's defaults).

    Returns
    -------
    tuple of (FedMixServer, callable int -> FedMixClient)

    Examples
    --------
    See ``tests/methods/test_fedmix.py``.
    """
    factory = task.model_factory()
    server = FedMixServer(factory, task.test, task.pretraining(), params.mean_batch, task.probes)
    return server, lambda client: FedMixClient(factory, task.clients[client], task.train, params)
