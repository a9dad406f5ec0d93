"""What the round loop records about one round (:class:`RoundRecord`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class RoundRecord:
    """What happened in one round.

    Parameters
    ----------
    round : int
        Round number (1-based).
    status : str
        ``"ok"`` when the round was aggregated, ``"skipped"`` otherwise.
    clients_sampled : int
        Clients selected.
    replies : int
        Replies received.
    dropped : list of int
        Selected clients that did not reply.
    bytes_up, bytes_down : int
        Bytes sent by clients and by the server.
    trips : int
        Exchanges (network round trips) the round used.
    wall_time_s : float
        Seconds the round took, evaluation included.
    metrics : dict of str to float
        Training metrics and, on evaluation rounds, evaluation metrics.
    reason : str
        Why the round was skipped (empty when it was not).
    rejected : dict of str to str
        Replies dropped by validation: client id (as text) -> reason.
    attempts : int
        How many times the round was tried (more than one under the
        ``retry`` quorum policy).
    """

    round: int
    status: str
    clients_sampled: int
    replies: int
    dropped: list[int]
    bytes_up: int
    bytes_down: int
    trips: int
    wall_time_s: float
    metrics: dict[str, float] = field(default_factory=dict)
    reason: str = ""
    rejected: dict[str, str] = field(default_factory=dict)
    attempts: int = 1

    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON-ready dict."""
        return asdict(self)
