"""One round's view of the federation, as the server logic sees it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from fedmosaic.errors import FedmosaicError
from fedmosaic.federation.grid import Grid
from fedmosaic.federation.message import Message
from fedmosaic.federation.robust import Aggregator, Contribution, Mean
from fedmosaic.federation.validation import NUM_EXAMPLES, OPEN, ReplyLimits, ReplySpec, check_reply, reply_size
from fedmosaic.seeding import derive_rng


class SecureUpload(Protocol):
    """Sends a round's upload and averages it without the server seeing any one reply's arrays.

    :class:`~fedmosaic.federation.secagg.server.SecureAggregation` is the
    implementation; it runs through the round's own exchanges.
    """

    def run(
        self,
        ctx: RoundContext,
        messages: Mapping[int, Message],
        expect: ReplySpec | Mapping[int, ReplySpec],
        reference: Mapping[str, np.ndarray],
        rng: np.random.Generator,
        summed: Mapping[str, np.ndarray] | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[int, Message]]:
        """The mean of each array of ``reference`` by the round's rule, the sum of each of ``summed``, the replies without them."""
        ...


LOG = logging.getLogger("fedmosaic.federation")

MessageObserver = Callable[[int, int, str, Message], None]
"""Called with (round, client, direction ``"down"``/``"up"``, message) for every message."""


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
        :func:`~fedmosaic.seeding.derive_seed`).
    grid : Grid
        The engine's grid.
    failing : frozenset of int
        Selected clients that will fail to reply (simulated dropouts).
    min_replies : int
        Fewest valid replies each exchange needs.
    limits : ReplyLimits
        Size and sample-count limits every reply must respect.
    observer : callable or None
        Sees every message that crosses (the message audit).
    aggregator : Aggregator
        The rule :meth:`aggregate` applies (the weighted mean by default).
    secure : SecureUpload or None
        When set (a :class:`~fedmosaic.federation.secagg.server.SecureAggregation`), :meth:`exchange_aggregated` runs the upload through secure
        aggregation instead of ``aggregator``.

    Attributes
    ----------
    noised : bool
        Whether :meth:`aggregate` has added noise this round (the federation
        accounts the privacy spent only then).
    """

    round: int
    clients: list[int]
    seed: int
    grid: Grid
    failing: frozenset[int] = frozenset()
    min_replies: int = 1
    limits: ReplyLimits = field(default_factory=ReplyLimits)
    observer: MessageObserver | None = None
    aggregator: Aggregator = field(default_factory=Mean)
    secure: SecureUpload | None = None
    aggregations: int = 0
    noised: bool = False
    bytes_down: int = 0
    bytes_up: int = 0
    replied: set[int] = field(default_factory=set)
    rejected: dict[int, str] = field(default_factory=dict)
    trips: int = 0

    def exchange(
        self,
        messages: Mapping[int, Message],
        *,
        quorum: bool = True,
        expect: ReplySpec | Mapping[int, ReplySpec] | None = None,
    ) -> dict[int, Message]:
        """Send messages to selected clients and return their valid replies.

        Bytes in both directions are counted. Every reply is checked against
        ``expect`` before the server logic sees it; a reply that does not fit
        is dropped, its reason logged and kept in :attr:`rejected`.

        Parameters
        ----------
        messages : mapping of int to Message
            One message per addressed client.
        quorum : bool, default True
            Require ``min_replies`` valid replies. Pass ``False`` for
            exchanges with only some of the round's clients (e.g. registering
            newcomers).
        expect : ReplySpec or mapping of int to ReplySpec or None
            What a reply may contain (one spec for all, or one per client);
            None applies the generic checks only (finite values, size,
            plausible sample count).

        Raises
        ------
        ValueError
            If a message is addressed to a client not selected this round.
        QuorumNotMet
            If ``quorum`` and fewer than ``min_replies`` valid replies arrive.
        """
        strangers = sorted(set(messages) - set(self.clients))
        if strangers:
            raise ValueError(f"round {self.round}: clients {strangers} were not selected")
        self.trips += 1
        self.bytes_down += sum(m.nbytes() for m in messages.values())
        for client, message in messages.items():
            self._observe(client, "down", message)
        arrived = self.grid.send_and_receive(messages, self.round, self.failing)
        replies: dict[int, Message] = {}
        for client in sorted(arrived):
            reply = arrived[client]
            self.bytes_up += reply_size(reply)
            self.replied.add(client)
            spec = _spec_for(expect, client)
            reason = check_reply(reply, spec, self.limits)
            if reason is not None:
                self.rejected[client] = reason
                LOG.warning("round %d: reply of client %d rejected: %s", self.round, client, reason)
                continue
            assert isinstance(reply, Message)
            self._observe(client, "up", reply)
            replies[client] = reply
        if quorum and len(replies) < self.min_replies:
            rejected = len(arrived) - len(replies)
            detail = f" ({rejected} rejected)" if rejected else ""
            raise QuorumNotMet(f"{len(replies)} valid replies{detail} < min_replies {self.min_replies}")
        return replies

    def exchange_aggregated(
        self,
        messages: Mapping[int, Message],
        *,
        expect: ReplySpec | Mapping[int, ReplySpec],
        reference: Mapping[str, np.ndarray],
        summed: Mapping[str, np.ndarray] | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[int, Message]]:
        """Send the round's upload and combine the replies' arrays named in ``reference``, weighted by ``num_examples``.

        Each name is combined over the replies that hold it (:meth:`aggregate`
        with the federation's rule), or, with :attr:`secure`, by secure
        aggregation, where the server receives only masked uploads and the
        replies come back without the combined arrays.

        Parameters
        ----------
        messages : mapping of int to Message
            One message per addressed client.
        expect : ReplySpec or mapping of int to ReplySpec
            What a reply may contain (as for :meth:`exchange`).
        reference : mapping of str to ndarray
            What was sent: the arrays to combine, and what updates are measured from.
        summed : mapping of str to ndarray or None
            Further arrays of the replies, given by their shape, summed over
            the replies that hold them without weights and without the rule
            (SCAFFOLD's control variate changes).

        Returns
        -------
        dict of str to ndarray
            The combined arrays, and the float64 sum of each array of
            ``summed`` (names no reply holds are absent).
        dict of int to Message
            The valid replies; with secure aggregation, without the combined and summed arrays.
        """
        if self.secure is not None:
            return self.secure.run(self, messages, expect, reference, self._aggregation_rng(), summed)
        replies = self.exchange(messages, expect=expect)
        uploads = [
            ({name: array for name, array in reply.arrays.items() if name in reference}, reply.metrics[NUM_EXAMPLES])
            for reply in replies.values()
            if any(name in reference for name in reply.arrays)
        ]
        combined = self.aggregate(uploads, reference) if uploads else {}
        for name, like in (summed or {}).items():
            holding = [reply.arrays[name] for reply in replies.values() if name in reply.arrays]
            if holding:
                combined[name] = sum((a.astype(np.float64) for a in holding), start=np.zeros(like.shape))
        return combined, replies

    def aggregate(
        self, contributions: Sequence[Contribution], reference: Mapping[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """Combine named arrays by the federation's rule (mean, robust, or private).

        Parameters
        ----------
        contributions : sequence of (mapping of str to ndarray, float)
            Each valid reply's arrays and weight (number of examples).
        reference : mapping of str to ndarray
            What was sent: updates are measured from it (clipping, noise).
        """
        return self.aggregator.aggregate(contributions, reference, self._aggregation_rng())

    def _aggregation_rng(self) -> np.random.Generator:
        """Counts one more aggregation and returns its derived generator (one noised aggregation a round)."""
        if self.noised:
            raise ValueError(
                f"round {self.round}: a second noised aggregation; the privacy accounting counts one per round"
            )
        self.aggregations += 1
        self.noised = self.aggregator.adds_noise
        return derive_rng(self.seed, self.round, "aggregate", self.aggregations)

    def _observe(self, client: int, direction: str, message: Message) -> None:
        if self.observer is not None:
            self.observer(self.round, client, direction, message)


def _spec_for(expect: ReplySpec | Mapping[int, ReplySpec] | None, client: int) -> ReplySpec:
    if expect is None:
        return OPEN
    if isinstance(expect, ReplySpec):
        return expect
    return expect.get(client, OPEN)
