"""Who takes part in each round: availability, sampling and simulated failures."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from fedmosaic.seeding import derive_rng


@dataclass(frozen=True)
class Schedule:
    """Participation plan of a federation.

    Parameters
    ----------
    num_clients : int
        Clients are numbered ``0 .. num_clients - 1``.
    fraction : float, default 1.0
        Share of the available clients sampled each round, rounded half up
        (at least one).
        Ignored when ``clients_per_round`` is set.
    clients_per_round : int or None, default None
        Exact number of clients sampled each round (capped by availability).
    joins : mapping of int to int, default empty
        ``client -> round`` at which the client joins; absent clients are
        there from round 1. A client receives nothing before it joins.
    leaves : mapping of int to int, default empty
        ``client -> round`` from which the client is gone.
    dropout : float, default 0.0
        Probability that a sampled client fails to reply (simulated, drawn
        from derived randomness).
    failures : mapping of int to frozenset of int, default empty
        ``round -> clients`` that fail to reply in that round, in addition to
        random dropouts.
    min_replies : int, default 1
        Fewest replies a round needs to be aggregated; with fewer the round
        is skipped and the global state stays as it was.

    Examples
    --------
    >>> schedule = Schedule(num_clients=4, joins={3: 2})
    >>> schedule.available(1)
    [0, 1, 2]
    >>> schedule.available(2)
    [0, 1, 2, 3]
    """

    num_clients: int
    fraction: float = 1.0
    clients_per_round: int | None = None
    joins: Mapping[int, int] = field(default_factory=dict)
    leaves: Mapping[int, int] = field(default_factory=dict)
    dropout: float = 0.0
    failures: Mapping[int, frozenset[int]] = field(default_factory=dict)
    min_replies: int = 1

    def __post_init__(self) -> None:
        if self.num_clients < 1:
            raise ValueError(f"num_clients must be >= 1, got {self.num_clients}")
        if not 0.0 < self.fraction <= 1.0:
            raise ValueError(f"fraction must be in (0, 1], got {self.fraction}")
        if self.clients_per_round is not None and self.clients_per_round < 1:
            raise ValueError(f"clients_per_round must be >= 1, got {self.clients_per_round}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.min_replies < 1:
            raise ValueError(f"min_replies must be >= 1, got {self.min_replies}")
        for name, mapping in (("joins", self.joins), ("leaves", self.leaves)):
            for client, rnd in mapping.items():
                if not 0 <= client < self.num_clients:
                    raise ValueError(f"{name}: client {client} is not in 0..{self.num_clients - 1}")
                if rnd < 1:
                    raise ValueError(f"{name}: round for client {client} must be >= 1, got {rnd}")

    def available(self, rnd: int) -> list[int]:
        """Clients that have joined and not left at round ``rnd``."""
        return [c for c in range(self.num_clients) if self.joins.get(c, 1) <= rnd < self.leaves.get(c, rnd + 1)]

    def largest_sample(self) -> int:
        """The most clients a round samples (when every client is available).

        Examples
        --------
        >>> Schedule(num_clients=1000, fraction=0.1).largest_sample()
        100
        """
        if self.clients_per_round is not None:
            return min(self.clients_per_round, self.num_clients)
        return max(1, math.floor(self.fraction * self.num_clients + 0.5))

    def sample(self, rnd: int, seed: int, *, attempt: int = 0) -> list[int]:
        """Clients selected for round ``rnd``, sorted, drawn from derived randomness.

        A retried round (``attempt`` > 0) draws from ``(seed, rnd, "sample", attempt)``.
        """
        pool = self.available(rnd)
        if not pool:
            return []
        if self.clients_per_round is not None:
            count = min(self.clients_per_round, len(pool))
        else:
            count = max(1, math.floor(self.fraction * len(pool) + 0.5))
        if count == len(pool):
            return pool
        rng = derive_rng(seed, rnd, "sample", attempt) if attempt else derive_rng(seed, rnd, "sample")
        return sorted(int(c) for c in rng.choice(pool, size=count, replace=False))

    def failing(self, rnd: int, sampled: list[int], seed: int) -> frozenset[int]:
        """Sampled clients that will fail to reply in round ``rnd``."""
        forced = self.failures.get(rnd, frozenset()) & frozenset(sampled)
        if self.dropout == 0.0:
            return frozenset(forced)
        draws = {c: derive_rng(seed, rnd, c, "dropout").random() for c in sampled}
        return frozenset(c for c, u in draws.items() if u < self.dropout) | forced
