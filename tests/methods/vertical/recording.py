"""An in-process grid that keeps every message and reply, to inspect what crosses party boundaries."""

from __future__ import annotations

from collections.abc import Mapping

from fedmosaic.federation import InProcessGrid, Message


class RecordingGrid(InProcessGrid):
    """:class:`InProcessGrid` that records ``(direction, client, message)`` for every transfer."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.transfers: list[tuple[str, int, Message]] = []

    def send_and_receive(
        self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int] = frozenset()
    ) -> dict[int, Message]:
        self.transfers += [("down", c, m) for c, m in messages.items()]
        replies = super().send_and_receive(messages, rnd, failing)
        self.transfers += [("up", c, m) for c, m in replies.items()]
        return replies
