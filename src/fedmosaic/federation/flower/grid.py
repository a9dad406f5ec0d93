"""A :class:`~fedmosaic.federation.grid.Grid` that reaches clients through Flower.

The server logic and the federation loop do not change: each exchange
becomes one batch of Flower messages pushed through the ``ServerApp``'s Flower
grid, and the replies are pulled until all have arrived or the timeout
passes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from flwr.app import Message as FlowerMessage
from flwr.serverapp import Grid as FlowerGridApi
from typing_extensions import override

from fedmosaic.errors import FedmosaicError
from fedmosaic.federation.flower.records import category, from_record_dict, to_record_dict
from fedmosaic.federation.grid import Grid
from fedmosaic.federation.message import ConfigValue, Message, as_int

PARTITION_QUERY = "query.fedmosaic-partition"
"""Kind of the bridge's own message asking a node which partition it serves."""
PARTITION = "partition"
POLL_S = 0.1
"""Seconds between two pulls of replies."""

log = logging.getLogger("fedmosaic.flower")


@dataclass(frozen=True)
class LostReply:
    """A reply that did not come back: the client counts as a dropout.

    Parameters
    ----------
    round : int
        The round of the exchange.
    client : int
        The client (partition) that did not reply.
    reason : str
        Why: Flower's error reply (code and reason), no node for the
        partition, or the timeout.
    """

    round: int
    client: int
    reason: str


class FlowerGrid(Grid):
    """Sends each exchange as Flower messages and matches the replies.

    Parameters
    ----------
    grid : flwr.serverapp.Grid
        The Flower grid given to the ``ServerApp``.
    header : mapping of str to scalar
        Bridge information sent with every message (which job it is); the
        round and the client id are added per message.
    timeout_s : float
        Longest wait for the replies of one exchange; replies that have not
        arrived by then are dropouts.
    connect_timeout_s : float, default 60.0
        Longest wait, at the first exchange, for the nodes of the addressed
        clients to connect.

    Notes
    -----
    Flower node ids are random: the grid asks every node it does not know yet
    which partition it serves (its ``partition-id`` node config) and keeps the
    map. Replies are matched to clients by ``reply_to_message_id``. An error
    reply (node unavailable, exception in the client) and a missing reply
    are dropouts; each is logged and kept in :attr:`lost`. Client states live
    on the nodes (Flower's ``context.state``), so :meth:`client_states` is
    empty.
    """

    def __init__(
        self,
        grid: FlowerGridApi,
        header: Mapping[str, ConfigValue],
        *,
        timeout_s: float,
        connect_timeout_s: float = 60.0,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self._grid = grid
        self._header = dict(header)
        self._timeout_s = timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._nodes: dict[int, int] = {}
        self._asked: set[int] = set()
        self._connected = False
        self.lost: list[LostReply] = []

    @override
    def send_and_receive(
        self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int]
    ) -> dict[int, Message]:
        wanted = sorted(set(messages) - failing)
        connected = self._map_nodes(wanted)
        outgoing: list[tuple[int, FlowerMessage]] = []
        for client in wanted:
            node = self._nodes.get(client)
            if node is None:
                self._lose(rnd, client, "no connected node serves this partition")
                continue
            if node not in connected:
                self._lose(rnd, client, f"node {node} is no longer connected")
                continue
            header = {**self._header, "round": rnd, "client": client}
            outgoing.append((client, self._flower_message(messages[client], header, node, rnd)))
        replies = self._exchange(outgoing, rnd)
        return {client: replies[client] for client in sorted(replies)}

    def _exchange(self, outgoing: list[tuple[int, FlowerMessage]], rnd: int) -> dict[int, Message]:
        answers, silent = self._round_trip(outgoing)
        replies: dict[int, Message] = {}
        for client, answer in answers.items():
            if answer.has_error():
                self._lose(rnd, client, f"error reply {answer.error.code}: {answer.error.reason}")
            else:
                replies[client], _ = from_record_dict(answer.content)
        for client in silent:
            self._lose(rnd, client, f"no reply within {self._timeout_s:g} s")
        return replies

    def _round_trip(
        self,
        outgoing: list[tuple[int, FlowerMessage]],
        enough: Callable[[dict[int, FlowerMessage]], bool] | None = None,
    ) -> tuple[dict[int, FlowerMessage], list[int]]:
        """Push the messages, then pull until every reply has come, ``enough`` holds, or the timeout has passed.

        Returns
        -------
        (dict, list)
            The Flower replies by key (error replies included), and the keys
            whose reply did not come.
        """
        if not outgoing:
            return {}, []
        self._grid.push_messages([m for _, m in outgoing])
        pending = {m.metadata.message_id: key for key, m in outgoing}
        deadline = time.monotonic() + self._timeout_s
        answers: dict[int, FlowerMessage] = {}
        while pending:
            for reply in self._grid.pull_messages(list(pending)):
                key = pending.pop(reply.metadata.reply_to_message_id, None)
                if key is not None:
                    answers[key] = reply
            if not pending or time.monotonic() >= deadline or (enough is not None and enough(answers)):
                break
            time.sleep(POLL_S)
        return answers, sorted(pending.values())

    def _map_nodes(self, wanted: Iterable[int]) -> set[int]:
        """Learn the partition of every connected node not asked yet; return the connected nodes.

        At the first exchange, wait (up to ``connect_timeout_s``) until the
        nodes of all addressed clients have connected.
        """
        missing = set(wanted) - set(self._nodes)
        deadline = time.monotonic() + (0.0 if self._connected else self._connect_timeout_s)
        while True:
            connected = set(self._grid.get_node_ids())
            unknown = sorted(connected - self._asked)
            if missing and unknown:
                self._ask_partitions(unknown, missing)
            missing -= set(self._nodes)
            if not missing or time.monotonic() >= deadline:
                break
            time.sleep(0.5)
        self._connected = True
        return connected

    def _ask_partitions(self, node_ids: list[int], missing: set[int]) -> None:
        """Ask ``node_ids`` which partition each serves; stop waiting once the ``missing`` partitions have answered.

        A node the SuperLink still lists after it died (until its heartbeats
        time out) does not hold up the exchange once the partitions wanted
        are known; its late answer is ignored.
        """
        self._asked.update(node_ids)

        def found_all(answers: dict[int, FlowerMessage]) -> bool:
            served = {_served(answer) for answer in answers.values() if not answer.has_error()}
            return missing <= served

        answers, silent = self._round_trip(
            [
                (node, self._flower_message(Message(kind=PARTITION_QUERY), dict(self._header), node, 0))
                for node in node_ids
            ],
            found_all,
        )
        for node, answer in answers.items():
            if answer.has_error():
                log.warning("node %d did not say which partition it serves: %s", node, answer.error.reason)
                continue
            partition = _served(answer)
            if partition in self._nodes:
                raise FedmosaicError(f"nodes {self._nodes[partition]} and {node} both serve partition {partition}")
            self._nodes[partition] = node
        for node in silent:
            self._asked.discard(node)  # asked again if its partition is still missing at a later exchange
            log.info("node %d has not said which partition it serves", node)

    def _flower_message(self, message: Message, header: dict[str, ConfigValue], node: int, rnd: int) -> FlowerMessage:
        return FlowerMessage(
            content=to_record_dict(message, header),
            dst_node_id=node,
            message_type=category(message.kind),
            group_id=str(rnd),
        )

    def _lose(self, rnd: int, client: int, reason: str) -> None:
        self.lost.append(LostReply(rnd, client, reason))
        log.warning("round %d: client %d dropped out: %s", rnd, client, reason)


def _served(answer: FlowerMessage) -> int:
    """The partition a node's answer to a partition query names."""
    return as_int(from_record_dict(answer.content)[0].config[PARTITION])
