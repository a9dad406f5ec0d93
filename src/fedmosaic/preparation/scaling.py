"""Federated feature scaling: each site sends its row count, sums and sums of squares once.

The server adds them up and derives every feature's mean and standard
deviation, exactly those of the pooled rows, without any row leaving a site.
Sites then standardise their own features (and the server its test table)
with them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from typing_extensions import override

from fedmosaic.errors import FedmosaicError
from fedmosaic.federation import ClientContext, ClientLogic, ClientState, Message, RoundContext, ServerLogic
from fedmosaic.federation.validation import ArraySpec, ReplySpec

MOMENTS = "moments"
"""Message kind of the exchange."""
MIN_SITE_ROWS = 10
"""Fewest rows a site sends statistics of: with two rows, a feature's sum and sum of squares give both values."""


@dataclass(frozen=True)
class Scaling:
    """Per-feature mean and standard deviation.

    Parameters
    ----------
    mean, std : numpy.ndarray
        float64 of the shape of one example (``(d,)`` for a table's rows, any
        shape for arrays); a constant feature has std 1.

    Examples
    --------
    >>> s = Scaling(np.array([1.0]), np.array([2.0]))
    >>> s.apply(np.array([[5.0]], np.float32)).tolist()
    [[2.0]]
    """

    mean: np.ndarray
    std: np.ndarray

    def apply(self, x: np.ndarray) -> np.ndarray:
        """``(x - mean) / std`` as float32."""
        scaled: np.ndarray = ((x.astype(np.float64) - self.mean) / self.std).astype(np.float32)
        return scaled

    def to_config(self) -> dict[str, list[float] | list[int]]:
        """The scaling as message/header config: flat values, and the shape of one example unless it is ``(d,)``.

        Examples
        --------
        >>> s = Scaling(np.zeros((2, 1)), np.ones((2, 1)))
        >>> Scaling.from_config(s.to_config()).mean.shape
        (2, 1)
        """
        config: dict[str, list[float] | list[int]] = {
            "scaling-mean": [float(v) for v in self.mean.flat],
            "scaling-std": [float(v) for v in self.std.flat],
        }
        if self.mean.ndim != 1:
            config["scaling-shape"] = [int(n) for n in self.mean.shape]
        return config

    @classmethod
    def from_config(cls, config: dict[str, object]) -> Scaling | None:
        """The scaling :meth:`to_config` wrote, None when absent."""
        if "scaling-mean" not in config:
            return None
        mean = np.asarray(config["scaling-mean"], dtype=np.float64)
        std = np.asarray(config["scaling-std"], dtype=np.float64)
        given = config.get("scaling-shape")
        shape = tuple(int(n) for n in given) if isinstance(given, list) else mean.shape
        return cls(mean.reshape(shape), std.reshape(shape))


def moments(x: np.ndarray) -> dict[str, np.ndarray]:
    """What a site sends: its row count, and per feature the sum and sum of squares (float64)."""
    wide = x.astype(np.float64)
    return {"count": np.array([len(x)], dtype=np.float64), "sum": wide.sum(axis=0), "sum_sq": (wide**2).sum(axis=0)}


def combine(replies: list[dict[str, np.ndarray]]) -> Scaling:
    """The pooled mean and standard deviation from the sites' moments.

    Examples
    --------
    >>> a, b = np.array([[0.0], [2.0]]), np.array([[4.0]])
    >>> s = combine([moments(a), moments(b)])
    >>> s.mean.tolist(), bool(np.isclose(s.std[0], np.concatenate([a, b]).std()))
    ([2.0], True)
    """
    count = sum(float(r["count"][0]) for r in replies)
    total = np.sum([r["sum"] for r in replies], axis=0)
    squares = np.sum([r["sum_sq"] for r in replies], axis=0)
    mean = total / count
    std = np.sqrt(np.maximum(squares / count - mean**2, 0.0))
    std[std < 1e-12] = 1.0
    return Scaling(mean, std)


class ScalingClient(ClientLogic):
    """A site: replies with the moments of its own features, when it has at least :data:`MIN_SITE_ROWS` rows.

    Parameters
    ----------
    x : numpy.ndarray
        The site's raw features ``(n, d)``.
    """

    def __init__(self, x: np.ndarray) -> None:
        self._x = x

    @override
    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        if len(self._x) < MIN_SITE_ROWS:  # the coordinator checks it first; a site never sends them anyway
            raise FedmosaicError(
                f"a site of {len(self._x)} rows sends no statistics (at least {MIN_SITE_ROWS} rows per site)"
            )
        return Message(arrays=moments(self._x), metrics={"num_examples": float(len(self._x))}, kind=message.kind)


class ScalingServer(ServerLogic):
    """Asks every site for its moments once (one round) and combines them.

    Parameters
    ----------
    shape : tuple of int
        Shape of one example: ``(d,)`` for ``d`` feature columns.
    """

    def __init__(self, shape: tuple[int, ...]) -> None:
        self._shape = tuple(shape)
        self.scaling: Scaling | None = None

    @override
    def initialize(self, seed: int) -> None:
        self.scaling = None

    @override
    def run_round(self, ctx: RoundContext) -> dict[str, float]:
        vector = ArraySpec(self._shape, "float64")
        expect = ReplySpec(
            arrays={"count": ArraySpec((1,), "float64"), "sum": vector, "sum_sq": vector},
            metrics=frozenset({"num_examples"}),
        )
        replies = ctx.exchange({c: Message(kind=f"query.{MOMENTS}") for c in ctx.clients}, expect=expect)
        self.scaling = combine([dict(replies[c].arrays) for c in sorted(replies)])
        return {"rows": float(sum(replies[c].metrics["num_examples"] for c in replies))}

    @override
    def evaluate(self, rnd: int) -> dict[str, float]:
        return {}

    @override
    def state_dict(self) -> ClientState:
        if self.scaling is None:
            return ClientState()
        return ClientState(arrays={"mean": self.scaling.mean, "std": self.scaling.std})

    @override
    def load_state_dict(self, state: ClientState) -> None:
        self.scaling = Scaling(state.arrays["mean"], state.arrays["std"]) if state.arrays else None
