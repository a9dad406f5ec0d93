"""Hostile clients, simulated: a grid that corrupts the replies of chosen clients.

Used to measure what validation and robust aggregation withstand: the
replies of the hostile clients are altered after they are computed, as a
broken or malicious participant would send them.

Attacks
-------
``sign-flip``
    The update (reply minus what was sent) is reversed.
``scale``
    The update is multiplied by 100.
``nan``, ``inf``
    One value of the first floating array is made NaN or infinite.
``wrong-shape``
    The first array gains one value (its shape changes).
``unknown-name``
    An array of a name the method never declared is added.
``oversized``
    A zero array one byte beyond the reply size limit is added.
``malformed``
    Each hostile client uses one of ``nan``, ``inf``, ``wrong-shape``,
    ``unknown-name``, ``oversized`` (by client id).
``reversed-graph``
    A confidence matrix (array ``confidence``) is transposed: every
    believed edge points the other way.
``random-graph``
    A confidence matrix is replaced by random beliefs (each pair's three
    states drawn from a flat Dirichlet).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from typing_extensions import override

from fedmosaic.federation.grid import Grid
from fedmosaic.federation.message import Message
from fedmosaic.federation.state import ClientState
from fedmosaic.seeding import derive_rng

MALFORMED = ("nan", "inf", "wrong-shape", "unknown-name", "oversized")
ATTACKS = ("sign-flip", "scale", *MALFORMED, "malformed", "reversed-graph", "random-graph")
SCALE = 100.0


def hostile_clients(num_clients: int, fraction: float, seed: int) -> frozenset[int]:
    """The ``round(fraction * num_clients)`` hostile clients, drawn from ``(seed, "hostile")``.

    Examples
    --------
    >>> sorted(hostile_clients(10, 0.3, seed=0)) == sorted(hostile_clients(10, 0.3, seed=0))
    True
    >>> len(hostile_clients(10, 0.3, seed=0)), len(hostile_clients(10, 0.0, seed=0))
    (3, 0)
    """
    count = math.floor(fraction * num_clients + 0.5)
    chosen = derive_rng(seed, "hostile").choice(num_clients, size=count, replace=False)
    return frozenset(int(c) for c in chosen)


class HostileGrid(Grid):
    """Forwards to ``inner`` and corrupts the replies of the ``hostile`` clients.

    Parameters
    ----------
    inner : Grid
        The engine.
    hostile : frozenset of int
        Clients whose replies are corrupted.
    attack : str
        One of :data:`ATTACKS`.
    seed : int
        Experiment seed (random confidences derive from it).
    max_bytes : int, default 256 MiB
        The reply size limit an ``oversized`` reply exceeds.
    """

    def __init__(
        self, inner: Grid, hostile: frozenset[int], attack: str, seed: int, max_bytes: int = 256 * 2**20
    ) -> None:
        if attack not in ATTACKS:
            raise ValueError(f"attack must be one of {', '.join(ATTACKS)}, got {attack!r}")
        self.inner = inner
        self.hostile = hostile
        self.attack = attack
        self.seed = seed
        self.max_bytes = max_bytes

    @override
    def send_and_receive(
        self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int]
    ) -> dict[int, Message]:
        replies = self.inner.send_and_receive(messages, rnd, failing)
        return {
            c: self._corrupt(c, rnd, messages[c], reply) if c in self.hostile else reply for c, reply in replies.items()
        }

    @override
    def client_states(self) -> dict[int, ClientState]:
        return self.inner.client_states()

    @override
    def load_client_states(self, states: Mapping[int, ClientState]) -> None:
        self.inner.load_client_states(states)

    def _corrupt(self, client: int, rnd: int, sent: Message, reply: Message) -> Message:
        attack = MALFORMED[client % len(MALFORMED)] if self.attack == "malformed" else self.attack
        arrays = dict(reply.arrays)
        floats = [n for n, a in arrays.items() if a.dtype.kind == "f" and a.size]
        if attack in ("sign-flip", "scale"):
            factor = -1.0 if attack == "sign-flip" else SCALE
            for name in floats:
                base = sent.arrays.get(name)
                if base is not None and base.shape == arrays[name].shape:
                    arrays[name] = (base + factor * (arrays[name] - base)).astype(arrays[name].dtype)
        elif attack in ("nan", "inf") and floats:
            poisoned = np.array(arrays[floats[0]])
            poisoned.flat[0] = np.nan if attack == "nan" else np.inf
            arrays[floats[0]] = poisoned
        elif attack == "wrong-shape" and arrays:
            name = next(iter(arrays))
            arrays[name] = np.append(np.ravel(arrays[name]), arrays[name].dtype.type(0))
        elif attack == "unknown-name":
            arrays["injected"] = np.zeros(4, np.float32)
        elif attack == "oversized":
            arrays["padding"] = np.zeros(self.max_bytes + 1, np.uint8)
        elif attack == "reversed-graph" and "confidence" in arrays:
            arrays["confidence"] = np.ascontiguousarray(arrays["confidence"].T)
        elif attack == "random-graph" and "confidence" in arrays:
            arrays["confidence"] = _random_confidence(
                len(arrays["confidence"]), derive_rng(self.seed, rnd, client, "hostile-graph")
            )
        return Message(arrays=arrays, config=dict(reply.config), metrics=dict(reply.metrics), kind=reply.kind)


def _random_confidence(size: int, rng: np.random.Generator) -> np.ndarray:
    values = np.zeros((size, size))
    for i in range(size):
        for j in range(i + 1, size):
            forward, backward, _ = rng.dirichlet(np.ones(3))
            values[i, j], values[j, i] = forward, backward
    return values
