"""One round's view of the federation, as the server logic sees it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from fedmosaic.errors import FedmosaicError
from fedmosaic.federation.grid import Grid
from fedmosaic.federation.message import Message


class QuorumNotMet(FedmosaicError):
    """Fewer replies arrived than the round needs; the round is skipped."""


@dataclass
class RoundContext:
    """Gives the server logic the round's clients and a counted channel to them.

    Parameters
    ----------
    round : int
        The round number (1-based).
    clients : list of int
        The clients selected for this round, sorted.
    seed : int
        The experiment seed (derive further seeds with
        :func:`~fedmosaic.federation.seeding.derive_seed`).
    grid : Grid
        The engine's grid.
    failing : frozenset of int
        Selected clients that will fail to reply (simulated dropouts).
    min_replies : int
        Fewest replies each exchange needs.
    """

    round: int
    clients: list[int]
    seed: int
    grid: Grid
    failing: frozenset[int] = frozenset()
    min_replies: int = 1
    bytes_down: int = 0
    bytes_up: int = 0
    replied: set[int] = field(default_factory=set)
    trips: int = 0

    def exchange(self, messages: Mapping[int, Message], *, quorum: bool = True) -> dict[int, Message]:
        """Send messages to selected clients and return their replies.

        Bytes in both directions are counted.

        Parameters
        ----------
        messages : mapping of int to Message
            One message per addressed client.
        quorum : bool, default True
            Require ``min_replies`` replies. Pass ``False`` for exchanges with
            only some of the round's clients (e.g. registering newcomers).

        Raises
        ------
        ValueError
            If a message is addressed to a client not selected this round.
        QuorumNotMet
            If ``quorum`` and fewer than ``min_replies`` replies arrive.
        """
        strangers = sorted(set(messages) - set(self.clients))
        if strangers:
            raise ValueError(f"round {self.round}: clients {strangers} were not selected")
        self.trips += 1
        self.bytes_down += sum(m.nbytes() for m in messages.values())
        replies = self.grid.send_and_receive(messages, self.round, self.failing)
        self.bytes_up += sum(r.nbytes() for r in replies.values())
        self.replied |= set(replies)
        if quorum and len(replies) < self.min_replies:
            raise QuorumNotMet(
                f"{len(replies)} replies < min_replies {self.min_replies}"
            )
        return replies
