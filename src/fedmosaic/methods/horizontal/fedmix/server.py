"""FedMix's and NaiveMix's server: FedAvg's rounds, with each client's means relayed to the others once."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from typing_extensions import override

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.federation import ArraySpec, ClientState, Message, ReplySpec, RoundContext, label_means_check
from fedmosaic.federation.message import ConfigValue
from fedmosaic.federation.robust import Contribution
from fedmosaic.methods.horizontal.fedavg.client import ModelFactory
from fedmosaic.methods.horizontal.fedavg.server import FedAvgServer
from fedmosaic.methods.horizontal.probes import Probe
from fedmosaic.methods.horizontal.task import Pretraining

_UPLOADED = ("mean_x", "mean_y")
_PREFIX = "fedmix/"


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
    See ``tests/methods/horizontal/test_fedmix.py`` for complete small runs.
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
