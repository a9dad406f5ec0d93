"""A stand-in for Flower's server-side grid that runs each node's ClientApp handler in this process.

Nodes get random-looking ids; each serves one partition through
``handle_flower_message`` with its own Flower ``Context`` (so client state
lives in ``context.state`` exactly as on a deployment). A node can be told to
answer with an error, to stay silent, or to disconnect.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from uuid import uuid4

import pytest
from flwr.app import Context, Error, RecordDict
from flwr.app import Message as FlowerMessage
from flwr.supercore.task_identity import TaskIdentity

from fedmosaic.federation import ClientLogic
from fedmosaic.federation.flower.client import handle_flower_message


@dataclass
class FakeNode:
    """One SuperNode: its partition, Flower context and behaviour."""

    partition: int
    context: Context
    behaviour: str = "ok"
    handled: list[str] = field(default_factory=list)


class FakeFlowerGrid:
    """Implements the part of ``flwr.serverapp.Grid`` the bridge uses."""

    def __init__(self, partitions: Iterable[int], logic: Callable[[int], ClientLogic]) -> None:
        self.nodes: dict[int, FakeNode] = {}
        for index, partition in enumerate(partitions):
            node_id = 7_000_001 + 7919 * index * (index + 3)
            context = Context(
                run_id=1,
                node_id=node_id,
                node_config={"partition-id": partition},
                state=RecordDict(),
                run_config={},
            )
            self.nodes[node_id] = FakeNode(partition, context)
        self._logic = logic
        self._replies: dict[str, FlowerMessage] = {}
        self.pushed: list[FlowerMessage] = []

    def node_of(self, partition: int) -> FakeNode:
        return next(n for n in self.nodes.values() if n.partition == partition)

    def get_node_ids(self) -> list[int]:
        return [i for i, n in self.nodes.items() if n.behaviour != "disconnected"]

    def push_messages(self, messages: Iterable[FlowerMessage]) -> list[str]:
        ids = []
        for message in messages:
            message.metadata.__dict__["_message_id"] = str(uuid4())
            self.pushed.append(message)
            node = self.nodes[message.metadata.dst_node_id]
            node.handled.append(message.metadata.message_type)
            ids.append(message.metadata.message_id)
            if node.behaviour == "error":
                self._replies[message.metadata.message_id] = FlowerMessage(
                    Error(code=3, reason="node unavailable"), reply_to=message
                )
            elif node.behaviour == "ok":
                self._replies[message.metadata.message_id] = self._handle(message, node)
        return ids

    def _handle(self, message: FlowerMessage, node: FakeNode) -> FlowerMessage:
        """Like Flower's ClientApp runner: an exception becomes an error reply."""
        try:
            return handle_flower_message(
                message, node.context, lambda header, partition, context: self._logic(partition)
            )
        except Exception as error:  # noqa: BLE001 - what Flower does with a failing handler
            return FlowerMessage(Error(code=2, reason=f"{type(error).__name__}: {error}"), reply_to=message)

    def pull_messages(self, message_ids: Iterable[str]) -> list[FlowerMessage]:
        return [self._replies.pop(i) for i in list(message_ids) if i in self._replies]


@pytest.fixture
def fake_flower_grid() -> Iterator[type[FakeFlowerGrid]]:
    """The fake grid class: ``FakeFlowerGrid(partitions, logic_by_partition)``.

    Flower stamps instruction messages with the identity of the ``ServerApp``
    task; a real ``ServerApp`` sets it, here the fixture does (and restores it).
    """
    saved = (TaskIdentity._run_id, TaskIdentity._task_id, TaskIdentity._node_id)
    TaskIdentity.run_id, TaskIdentity.task_id, TaskIdentity.node_id = 1, 1, 0
    yield FakeFlowerGrid
    TaskIdentity._run_id, TaskIdentity._task_id, TaskIdentity._node_id = saved
